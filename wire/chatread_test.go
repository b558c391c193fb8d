package wire

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// chatReadSeeds are chat requests at the edges of what readChat reads
// itself and what it leaves to the general path: members given twice or
// with escaped names, values of every type where a string, an array or an
// object is read, parts with and without text, thoughts and types, calls
// without functions, tools named either way, and bodies the general path
// refuses.
var chatReadSeeds = []string{
	`{}`, `[]`, `"x"`, `{"model":"m"}`, ` { "model" : "m" , "stream" : true } `, `{"stream":false}`, `{"stream":1}`,
	`{"model":1,"stream":"true","messages":null,"tools":null}`, `{"messages":{}}`, `{"messages":"hi"}`, `{"tools":{}}`,
	`{"messages":[]}`, `{"messages":[1]}`, `{"messages":[{}]}`, `{"messages":[[]]}`, `{"messages":[null]}`,
	`{"stream":true,"stream_options":{"include_usage":true,"include_obfuscation":false}}`, `{"stream_options":null}`,
	`{"stream_options":"x"}`, `{"stream_options":[1]}`, `{"stream_options":{"include_usage":true},"stream_options":{}}`,
	`{"stream_\u006fptions":{"include_usage":true}}`, `{"stream_options":{"include_usage":"true","include_usage":true}}`,
	`{"model":"a","model":"b"}`, `{"mo\u0064el":"a"}`, `{"model":"a\"b\\c\u00e9\ud83d\ude00"}`,
	`{"messages":[{"role":"user","content":"hi","role":"tool"}]}`,
	`{"messages":[{"role":"system","content":"be brief"},{"role":"developer","content":[{"type":"text","text":"x"}]},{"role":"user","content":"q"}]}`,
	`{"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"text":"b"},{"type":"input_text","text":"c"},{"type":"output_text","text":"c2"},{"type":"image_url","text":"d"},{"text":"e","thought":true},{"text":"f","thought":"yes"},{"text":1},{"type":1,"text":"g"},"s",1,null,{}]}]}`,
	`{"messages":[{"role":"user","content":[{"text":"a"},[1]]}]}`,
	`{"messages":[{"role":"user","content":[{"text":"a","text":"b"}]}]}`,
	`{"messages":[{"role":"user","content":[{"t\u0065xt":"a"}]}]}`,
	`{"messages":[{"role":"user","content":{"text":"a"}}]}`,
	`{"messages":[{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Paris\"}"}},{"id":"c2","function":{"name":"calc","arguments":{"x":1}}},{"function":{"name":"n","arguments":""}},{"function":{"arguments":[1]}},{"function":{"arguments":7}},{"id":3,"function":"f"},"call",null,{}]}]}`,
	`{"messages":[{"role":"assistant","tool_calls":[{"function":[{"name":"x"}]}]}]}`,
	`{"messages":[{"role":"assistant","tool_calls":{"id":"c1"}}]}`, `{"messages":[{"role":"assistant","tool_calls":"x"}]}`,
	`{"messages":[{"role":"assistant","tool_calls":null}]}`, `{"messages":[{"role":"assistant","tool_calls":[[1]]}]}`,
	`{"messages":[{"role":"assistant","tool_calls":[{"id":"a","id":"b"}]}]}`,
	`{"messages":[{"role":"assistant","tool_calls":[{"function":{"name":"a","name":"b"}}]}]}`,
	`{"messages":[{"role":"assistant","tool_calls":[{"id":"c1","function":{"name":"weather","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"{\"t\":21}"},{"role":"tool","tool_call_id":"c9","name":"given","content":[{"type":"text","text":"r"}]},{"role":"tool","tool_name":"olla","content":null},{"role":"tool"}]}`,
	`{"tools":[{"type":"function","function":{"name":"a","parameters":{"type":"object","properties":{"x":{"type":"string"}}}}},{"name":"b"},{"function":{"name":""},"name":"c"},{"function":{"name":1}},{"function":"f","name":"d"},1,"s",null,{}]}`,
	`{"tools":[[1]]}`, `{"tools":[{"function":[1]}]}`,
	`{"tools":[{"name":"a","name":"b"}]}`, `{"tools":[{"function":{"name":"a","name":"b"}}]}`,
	`{"tools":[{"function":{"name":"a"},"function":{"name":"b"}}]}`,
	`{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat(`a\"b\\`, 40) + `"}],"stream":true,"stream_options":{"include_usage":true}}`,
	`{"model":"m"} `, "{\"model\":\"m\"}\n", `{"model":"m"`, `{"model":"m"}}`, `{"messages":[{"role":"user","content":"hi"}]`, ``,
	"{\"messages\":[{\"role\":\"user\",\"content\":\"\xff\xfe\"}]}",
	`{"messages":[{"role":"user","content":"a"}],"messages":[{"role":"user","content":"b"}]}`,
	`{"a":[{"b":"]}"},{"c":"\\"}],"model":"m","x":-1.5e3,"y":true,"z":null}`,
}

// TestReadChatIsGeneral: whatever readChat reads, it reads as the general
// path does, and it reads every body the general path refuses as one to
// leave to it; on the seeds, on every captured request body (read as
// OpenAI chat and as Ollama chat, whatever its API), and on
// ParseRequest's own fixtures, where it must decline none.
func TestReadChatIsGeneral(t *testing.T) {
	for _, s := range chatReadSeeds {
		checkReadChat(t, []byte(s))
	}
	read := 0
	paths, err := filepath.Glob("../internal/fake/captured/*/*.request.json")
	more, _ := filepath.Glob("../internal/fake/captured/*.request.json")
	if err != nil || len(more) == 0 {
		t.Fatalf("no captured requests: %v", err)
	}
	for _, p := range append(paths, more...) {
		if checkReadChat(t, readFile(t, p)) {
			read++
		}
	}
	if read == 0 {
		t.Error("readChat read none of the captured requests")
	}
	for _, name := range []string{"openai-chat-toolcalls.request.json", "openai-chat-toolresult.request.json", "openai-chat-stream-toolresult.request.json", "ollama-api-chat-toolresult.request.json"} {
		kind := KindOpenAIChat
		if strings.HasPrefix(name, "ollama") {
			kind = KindOllama
		}
		if _, ok := readChat(kind, readFile(t, filepath.Join("../internal/fake/captured", name))); !ok {
			t.Errorf("%s: readChat left it to the general path", name)
		}
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// FuzzReadChat checks TestReadChatIsGeneral's rule on any input.
func FuzzReadChat(f *testing.F) {
	for _, s := range chatReadSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkReadChat(t, b) })
}

// checkReadChat compares readChat with the general path on b, as both
// chat kinds, and reports whether readChat read it.
func checkReadChat(t *testing.T, b []byte) (read bool) {
	t.Helper()
	for _, kind := range []Kind{KindOpenAIChat, KindOllama} {
		want, err := parseRequest(kind, "/api/chat", b)
		got, ok := readChat(kind, b)
		if ok {
			nameResults(&got)
		}
		switch {
		case ok && err != nil:
			t.Errorf("%s %.200q: readChat read a body the general path refuses (%v)", kind, b, err)
		case ok && !reflect.DeepEqual(got, want):
			t.Errorf("%s %.200q: readChat gave\n%#v\nthe general path\n%#v", kind, b, got, want)
		}
		read = read || ok
	}
	return read
}
