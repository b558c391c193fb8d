package scenario

import (
	"cmp"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v4"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/fixture"
	"github.com/llmproxy/llmproxy/wire"
)

// The scenario file as from-cassette writes it: the keys of the format, in
// its order.
type (
	fileScenario struct {
		Version  int                    `yaml:"version"`
		Name     string                 `yaml:"name"`
		Fixtures map[string]fileFixture `yaml:"fixtures,omitempty"`
		Steps    []fileStep             `yaml:"steps"`
	}
	fileFixture struct {
		Preset    string `yaml:"preset"`
		ID        string `yaml:"id"`
		Arguments any    `yaml:"arguments"`
		Result    any    `yaml:"result,omitempty"`
		Error     any    `yaml:"error,omitempty"`
	}
	fileStep struct {
		ID       string      `yaml:"id"`
		Start    bool        `yaml:"start,omitempty"`
		When     *fileWhen   `yaml:"when,omitempty"`
		Respond  fileRespond `yaml:"respond"`
		Then     []string    `yaml:"then,omitempty"`
		Complete bool        `yaml:"complete,omitempty"`
	}
	fileWhen struct {
		LatestUser map[string]string `yaml:"latest-user,omitempty"`
		ToolResult []fileResult      `yaml:"tool-result,omitempty"`
	}
	fileResult struct {
		Fixture string `yaml:"fixture,omitempty"`
		Name    string `yaml:"name,omitempty"`
		ID      string `yaml:"id,omitempty"`
	}
	fileRespond struct {
		Text      string     `yaml:"text,omitempty"`
		Reasoning string     `yaml:"reasoning,omitempty"`
		ToolCalls []fileCall `yaml:"tool-calls,omitempty"`
		Finish    string     `yaml:"finish,omitempty"`
		Usage     *fileUsage `yaml:"usage,omitempty"`
		Error     *fileError `yaml:"error,omitempty"`
	}
	fileUsage struct {
		Input     int `yaml:"input"`
		Output    int `yaml:"output"`
		Reasoning int `yaml:"reasoning,omitempty"`
	}
	fileCall struct {
		Fixture   string `yaml:"fixture,omitempty"`
		Function  string `yaml:"function,omitempty"`
		Arguments any    `yaml:"arguments,omitempty"`
		ID        string `yaml:"id,omitempty"`
	}
	fileError struct {
		Status  int    `yaml:"status"`
		Message string `yaml:"message"`
	}
)

// cassetteConv is one recorded conversation: its steps, and the calls its
// last answer made.
type cassetteConv struct {
	steps []int             // indexes into the scenario's steps
	calls map[string]string // the last answer's calls: function name by call id
}

// FromCassette writes, as a scenario file, a scenario that answers the
// recorded chat conversations of c as they were answered (see
// fromCassette), named after the cassette's file and checked as mock loads
// it: file names it in the errors of that check.
func FromCassette(c *cassette.Cassette, file string) ([]byte, error) {
	base := filepath.Base(c.Path())
	s, err := fromCassette(c, strings.SplitN(base, ".", 2)[0])
	if err != nil {
		return nil, err
	}
	text, err := yaml.Marshal(s)
	if err != nil {
		return nil, err
	}
	text = append([]byte("# Written by llmproxy scenario from-cassette from "+base+"; edit freely.\n"), text...)
	// What is written must load as mock loads it.
	if _, err := Parse(file, text); err != nil {
		return nil, fmt.Errorf("the scenario written does not check: %w", err)
	}
	return text, nil
}

// fromCassette turns a cassette's chat interactions into a scenario: one
// step per recorded answer, chained within each conversation (a request
// that continues an earlier one's history, or names its answer by
// previous_response_id), each conversation beginning at an entry step of
// its own, so that the recorded conversations may come in any order.
func fromCassette(c *cassette.Cassette, name string) (*fileScenario, error) {
	s := &fileScenario{Version: 1, Name: name, Fixtures: map[string]fileFixture{}}
	var convs []*cassetteConv
	var threads cassette.Conversations
	err := c.ForEach(func(i *cassette.Interaction) error {
		kind := wire.Kind(i.Kind)
		body := []byte(i.Request.Body)
		if !kind.CallsTools() || wire.Answerable(kind, body) != nil {
			return nil // not a chat answer mock could give
		}
		path := i.Request.Path
		if i.Request.Query != "" {
			path += "?" + i.Request.Query
		}
		req, err := wire.ParseRequest(kind, path, body)
		if err != nil {
			return fmt.Errorf("interaction %d: %w", i.ID, err)
		}
		step := fileStep{ID: fmt.Sprintf("i%d", i.ID)}
		resp := i.Response.Bytes()
		var r wire.Response
		if i.Response.Status >= 400 {
			step.Respond.Error = &fileError{Status: i.Response.Status, Message: errorMessage(resp)}
		} else if r, err = wire.ParseResponse(kind, i.Response.WireFraming(), resp); err != nil {
			return fmt.Errorf("interaction %d: %w", i.ID, err)
		}
		n, _ := threads.Add(req, body, r.ResponseID)
		var conv *cassetteConv
		if n < len(convs) {
			conv = convs[n]
		}
		step.When = when(c, s, req, conv)
		if step.Respond.Error == nil {
			step.Respond = respond(c, s, r)
		}
		if conv == nil {
			conv = &cassetteConv{}
			convs = append(convs, conv)
		}
		conv.steps = append(conv.steps, len(s.Steps))
		conv.calls = map[string]string{}
		for _, tc := range r.ToolCalls {
			conv.calls[tc.ID] = tc.Name
		}
		s.Steps = append(s.Steps, step)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(s.Steps) == 0 {
		return nil, fmt.Errorf("no chat interaction to convert")
	}
	linkConversations(s, convs)
	if len(s.Fixtures) == 0 {
		s.Fixtures = nil
	}
	return s, nil
}

// linkConversations gives each step of a conversation the step that
// followed it in the recording as its then, and makes each conversation's
// first step an entry (start: true) and its last step complete. A
// conversation whose first request has the same conditions as an earlier
// one's cannot be told from it by its first request: it follows the last
// earlier such conversation instead, as it followed in the recording (a
// conversation named by the X-Llmproxy-Conversation header meets it there).
func linkConversations(s *fileScenario, convs []*cassetteConv) {
	entries := map[string]*cassetteConv{} // the last conversation beginning so, by its first conditions
	for _, conv := range convs {
		for n, at := range conv.steps {
			if n+1 < len(conv.steps) {
				s.Steps[at].Then = []string{s.Steps[conv.steps[n+1]].ID}
			}
		}
		first := &s.Steps[conv.steps[0]]
		key, _ := yaml.Marshal(first.When)
		if earlier, ok := entries[string(key)]; ok {
			s.Steps[earlier.steps[len(earlier.steps)-1]].Then = []string{first.ID}
		} else {
			first.Start = true
		}
		entries[string(key)] = conv
	}
	for i := range s.Steps {
		s.Steps[i].Complete = s.Steps[i].Then == nil
	}
}

// when is a step's condition: the tool results of the request's latest turn
// that answer the conversation's last calls (by fixture where the cassette
// holds one), else the latest user text.
func when(c *cassette.Cassette, s *fileScenario, req wire.Request, conv *cassetteConv) *fileWhen {
	var results []fileResult
	last := false
	if n := len(req.Turns); n > 0 {
		switch t := req.Turns[n-1]; t.Role {
		case "tool", "function", "function_call_output":
			last = true
		default:
			last = t.Text == ""
		}
	}
	for _, r := range req.ToolResults {
		if !last || conv == nil {
			continue
		}
		name, ok := conv.calls[r.CallID]
		if !ok {
			continue
		}
		if fx, ok := fixtureOf(c, s, r.CallID); ok {
			results = append(results, fileResult{Fixture: fx})
			continue
		}
		// A request that names the call only by id (previous_response_id)
		// has the function's name in the answer that made the call.
		results = append(results, fileResult{Name: cmp.Or(r.Name, name), ID: r.CallID})
	}
	if len(results) > 0 {
		return &fileWhen{ToolResult: results}
	}
	for n := len(req.Turns) - 1; n >= 0; n-- {
		if t := req.Turns[n]; t.Role == "user" && t.Text != "" {
			return &fileWhen{LatestUser: map[string]string{"equals": t.Text}}
		}
	}
	return nil
}

// fixtureOf adds the cassette's fixture of a call to the scenario, named by
// its call id, and returns the name; false when the cassette has none or
// the call's function is not the preset's own.
func fixtureOf(c *cassette.Cassette, s *fileScenario, callID string) (string, bool) {
	if callID == "" {
		return "", false
	}
	raw, err := c.Fixture(callID)
	if err != nil {
		return "", false
	}
	f, err := fixture.Parse(callID, raw)
	if err != nil || f.Function != "" {
		return "", false
	}
	name := strings.NewReplacer("-", "_", ".", "_").Replace(callID)
	ff := fileFixture{Preset: f.Preset, ID: callID, Arguments: jsonValue(f.Call.Arguments)}
	if f.Result.IsError {
		ff.Error = jsonValue(f.Result.Content)
	} else {
		ff.Result = jsonValue(f.Result.Content)
	}
	s.Fixtures[name] = ff
	return name, true
}

// respond is a step's answer: the recorded text, reasoning, tool calls,
// finish reason (when it is not the default for the answer, and is one the
// scenario format names) and usage (when the answer carried one).
func respond(c *cassette.Cassette, s *fileScenario, r wire.Response) fileRespond {
	out := fileRespond{Text: r.Text, Reasoning: r.Reasoning}
	switch def := wire.FinishStop; r.Finish {
	case wire.FinishStop, wire.FinishLength, wire.FinishToolCalls:
		if len(r.ToolCalls) > 0 {
			def = wire.FinishToolCalls
		}
		if r.Finish != def {
			out.Finish = string(r.Finish)
		}
	}
	// A usage the format cannot hold (negative, or more reasoning than
	// output, as no provider sends) is left to mock's default.
	if u := r.Usage; u != (wire.Usage{}) && u.Input >= 0 && u.Output >= 0 {
		out.Usage = &fileUsage{Input: u.Input, Output: u.Output}
		if u.Reasoning > 0 && u.Reasoning <= u.Output {
			out.Usage.Reasoning = u.Reasoning
		}
	}
	for _, tc := range r.ToolCalls {
		if fx, ok := fixtureOf(c, s, tc.ID); ok {
			out.ToolCalls = append(out.ToolCalls, fileCall{Fixture: fx})
			continue
		}
		args := jsonValue(tc.Arguments)
		if args == nil {
			args = map[string]any{}
		}
		out.ToolCalls = append(out.ToolCalls, fileCall{Function: tc.Name, Arguments: args, ID: tc.ID})
	}
	return out
}

// jsonValue decodes JSON for the YAML writer; nil when it is not JSON.
func jsonValue(raw []byte) any {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return nil
	}
	return v
}

// errorMessage is the message of a recorded error body.
func errorMessage(body []byte) string {
	if m := wire.ErrorMessage(body); m != "" {
		return m
	}
	return "recorded error"
}
