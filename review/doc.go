// Package review compares two recordings of an application's traffic — two
// cassettes, typically a cassette and its re-record — conversation by
// conversation and turn by turn, and says of each change whether only the
// model's wording changed, its behaviour, or what the application sent.
//
// # Pairing
//
// Each cassette's chat interactions are grouped into conversations by
// message history (cassette.Conversations, as scenario from-cassette
// groups them); an interaction of another kind (embeddings, generic) is a
// conversation of one turn. A conversation of NEW is paired with one of OLD
// that began with the same first user turn (the k-th such with the k-th),
// else with the first unpaired one of OLD that began with the same setup
// (API kind, system prompt, tools offered, parameters: the opening request
// without its first user turn), in order — a prompt that changed;
// what is left is added (NEW only) or removed (OLD only). Paired
// conversations pair their turns by position; a turn beyond the other's
// end is added or removed.
//
// # Classes
//
// A turn's differences each have a class:
//
//   - Request: the application sent something else — the prompt, the tools
//     offered, a parameter, the endpoint. What repeats the model's earlier
//     answers (its turns in the history, call ids, previous_response_id;
//     wire.Request.Echoes) is not compared: it changed with those answers,
//     which are compared where they were given.
//   - Behaviour: a tool call added, removed or renamed, its arguments
//     changed, the finish reason changed, the structured output changed
//     (its shape, or a value that is not a string), an error instead of an
//     answer or the reverse, the status of an error; for an interaction
//     that is not a chat (embeddings, generic), its answer's body; a turn
//     added or removed.
//   - Wording: the answer's text, its reasoning, an error's message, a
//     string inside a structured output.
//
// A turn, and a conversation, is classed by its most severe difference:
// behaviour, then request, then wording; otherwise it is identical.
// Response ids, times, usage and headers are never compared.
//
// # Memory
//
// A cassette is read twice: once to group and digest (a hash of what is
// compared, per interaction, and a few words per conversation: never a
// body), then once per differing pair, one interaction at a time. Memory
// grows with the number of interactions by that digest alone.
package review
