// Package scenario scripts a model's side of conversations, step by step, and
// answers requests from the script without any provider.
//
// # The model
//
// A Scenario is a list of Steps and named preset Fixtures. A step has
// conditions (When: the latest user text, the system prompt, the tool
// results sent, the model, the API kind, the tools offered, JSON paths of
// the body), an answer (Respond: text, fixed or derived from the request by
// a template, an echo or a summary; a JSON value for structured output,
// checked against or made from the schema the request asks for; reasoning,
// tool calls, a preset's under the application's own function name (As),
// finish reason, usage, ids, or a provider error; and how it is delivered:
// delay, stream chunking and pacing, a cut after some events) and its successors (Then, by
// default the next step in the file; Complete ends the conversation).
//
// Load and Parse read the model from a YAML or JSON file; Builder makes it in
// Go. Both give the same value and check it by the same rules, reporting
// every problem at once: an ErrorList of *Error, each FILE:LINE: message for
// a file. The Engine never sees YAML. FromCassette writes a scenario file
// that answers a cassette's recorded conversations as they were answered.
//
// # The engine
//
// An Engine serves one scenario to any number of conversations, each keeping
// its own position. A request is answered by the first of its conversation's
// candidates whose conditions hold: the entry steps (the first step, those
// with Start, or every step of a flat list) before any answer, then the Then
// of the step last answered. A request that names no conversation carries
// its position: the answers its history echoes are walked from the entry
// steps to the steps that wrote them (by text and calls; an answer made
// from the request, by making it again from what preceded it), and what no
// history shows (an error or a cut stream answered to the same bytes, the
// answer a Responses previous_response_id names) is kept by the engine. A
// named conversation's position is kept by the engine. Engine.Answer returns the answer
// pending; the serving layer delivers its Delivery (a wire.Answer and how to
// send it) and then calls Commit. Only a commit moves the conversation on,
// so an answer the client did not receive whole changes nothing, and
// neither does a miss (a *Miss wrapping ErrMiss, naming each candidate step
// and the first of its conditions that failed, with what the request had and
// what the step wants).
//
// # Rules
//
//   - Determinism: the same scenario answering the same requests gives the
//     same answers. Response ids are the provider's prefix plus
//     <scenario>-<n>, n counting the conversation's answers from 1; the
//     creation time is DefaultCreated; tool call ids are the fixture's or
//     the call's, else call_<function>, call_<function>_2, … counting the
//     conversation's calls that took a default id.
//   - JSON values in conditions (tool arguments and results, json equals)
//     compare as values: key order, whitespace and number spelling aside.
//     A tool result sent as a JSON string holding JSON (as OpenAI's wire
//     carries it) is compared by the JSON it holds.
//   - The cost of an answer does not grow with the number of steps: steps
//     are indexed and only the candidates are tried.
//   - An Engine is safe for concurrent use; conversations are independent.
//     What it keeps (named conversations, positions after silent answers,
//     Responses answers by id) is bounded by MaxConversations each, the least
//     recently used forgotten, and the calls each conversation remembers (for
//     requests that name a call only by id) by a fixed count.
//   - Reading a request's position costs one pass over its history: echoed
//     answers are found by their text and call names, first requests' entry
//     steps by a latest-user equals text; no step or conversation is
//     scanned. Only candidates whose answer is made from the request (a text
//     generator, a json answer) are made again to be compared.
package scenario
