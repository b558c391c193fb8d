// Package presets holds twelve well-known, provider-neutral function tools —
// calculator, current_time, weather, web_search, fetch_url, file_search,
// read_file, write_file, list_files, run_code, shell and apply_patch — as
// scripted fixtures: a call a model makes, and the result a tool gives back.
//
// A preset never evaluates an expression, reads a clock, fetches a URL,
// touches a file or runs a command. It only carries what a test scripted.
//
// # The catalogue
//
// All returns one Descriptor per preset, in a fixed order; Lookup finds one
// by function name. A Descriptor has the preset's name, a description for the
// model, and three JSON Schemas (draft 2020-12): its arguments, its
// successful result, and its error. It validates raw payloads against them
// (ValidateArguments, ValidateResult, ValidateError) and gives the preset as
// a function tool (Tool, a wire.ToolDef), which package wire writes in each
// provider's shape (OpenAIChatTool, ResponsesTool, AnthropicTool,
// GeminiFunctionDeclaration).
//
// # Typed presets
//
// Each preset is also a package variable, such as Weather, of type
// Preset[WeatherArgs, WeatherResult]. Its Call, Result and Error build a
// provider-neutral wire.ToolCall or wire.ToolResult; Success and Failure
// build a Fixture holding both, with an optional delay, which this package
// only carries (it never sleeps).
//
// Turning recorded tool rounds into fixtures, storing them in a cassette and
// handing them back to an application is package fixture's job; presets is
// the catalogue it checks them against. It imports nothing from llmproxy but
// package wire.
//
// # Rules
//
//   - Schemas are closed: every object, nested ones included, rejects
//     properties it does not list.
//   - A success result keeps its own root ({"value":42}); there is no
//     success envelope. A failure is the envelope shared by all presets,
//     {"error":{"code":…,"message":…,"retryable":…}}.
//   - Optional fields that are absent are omitted, never sent as null or as
//     a zero value.
//   - Payloads are stored as canonical JSON (see Canonical): compact, keys
//     sorted, numbers as written.
//   - The default call id is "call_" followed by the function name. An
//     explicit id is not blank and has at most MaxIDLength characters;
//     calls in one turn have distinct ids (CheckTurn).
//   - current_time's result carries the caller's timestamp; a zero
//     timestamp is rejected rather than replaced by the time of day.
//
// # Errors
//
// Every payload is checked against its schema before it is returned, and
// the raw validators apply the same schemas to recorded traffic. A violation
// is a *ValidationError that names the preset, the JSON Pointer of the field
// and the rule, and wraps a sentinel from errors.go:
//
//	presets: web_search arguments: /limit: must be >= 1 (minimum)
//
// Schemas are compiled once, on first use, and are safe for concurrent use.
// The package holds no other state.
package presets
