package presets

import (
	"encoding/json"
	"time"
)

// TemperatureUnit is the unit of a weather temperature.
type TemperatureUnit string

// The temperature units the weather preset accepts.
const (
	Celsius    TemperatureUnit = "celsius"
	Fahrenheit TemperatureUnit = "fahrenheit"
)

// EntryKind tells a file from a directory in a list_files result.
type EntryKind string

// The kinds of list_files entries.
const (
	KindFile      EntryKind = "file"
	KindDirectory EntryKind = "directory"
)

// ToolError is a scripted tool failure. As a result it is sent inside the
// shared envelope {"error":{"code","message","retryable"}}. It is tool-result
// content, not a provider HTTP error.
type ToolError struct {
	Code      string `json:"code"`
	Message   string `json:"message"`
	Retryable bool   `json:"retryable"`
}

// Error makes a ToolError usable as a Go error, for code that hands
// fixtures to an application in place of its real tools.
func (e ToolError) Error() string { return e.Code + ": " + e.Message }

// ErrorEnvelope is the JSON root of every failure result.
type ErrorEnvelope struct {
	Error ToolError `json:"error"`
}

// CalculatorArgs are the arguments of calculator.
type CalculatorArgs struct {
	Expression string `json:"expression"`
}

// CalculatorResult is the result of calculator.
type CalculatorResult struct {
	Value float64 `json:"value"`
}

// CurrentTimeArgs are the arguments of current_time.
type CurrentTimeArgs struct {
	// TimeZone is an IANA name such as "Europe/Paris". The preset never
	// loads it.
	TimeZone string `json:"timeZone"`
}

// CurrentTimeResult is the result of current_time.
type CurrentTimeResult struct {
	// Timestamp must be set by the caller: a preset never reads a clock, and
	// a zero Timestamp is rejected. It is written as RFC 3339 with the
	// offset of its location.
	Timestamp time.Time `json:"timestamp"`
	TimeZone  string    `json:"timeZone"`
}

// check rejects the zero time, which would otherwise pass as a valid
// date-time in the year 1.
func (r CurrentTimeResult) check() []Violation {
	if r.Timestamp.IsZero() {
		return []Violation{{Path: "/timestamp", Rule: "explicit", Message: "must be set by the caller; a preset never reads a clock"}}
	}
	return nil
}

// WeatherArgs are the arguments of weather.
type WeatherArgs struct {
	Location string `json:"location"`
	// Unit is omitted when empty.
	Unit TemperatureUnit `json:"unit,omitempty"`
}

// WeatherResult is the result of weather.
type WeatherResult struct {
	Location    string          `json:"location"`
	Temperature float64         `json:"temperature"`
	Unit        TemperatureUnit `json:"unit"`
	Condition   string          `json:"condition"`
}

// WebSearchArgs are the arguments of web_search.
type WebSearchArgs struct {
	Query string `json:"query"`
	// Limit, when set, is 1–100.
	Limit *int `json:"limit,omitempty"`
}

// WebSearchHit is one page found by web_search.
type WebSearchHit struct {
	Title   string `json:"title"`
	URL     string `json:"url"`
	Snippet string `json:"snippet"`
}

// WebSearchResult is the result of web_search. Nil Hits are written as [].
type WebSearchResult struct {
	Hits []WebSearchHit `json:"hits"`
}

// MarshalJSON writes nil Hits as an empty array.
func (r WebSearchResult) MarshalJSON() ([]byte, error) {
	type plain WebSearchResult
	if r.Hits == nil {
		r.Hits = []WebSearchHit{}
	}
	return json.Marshal(plain(r))
}

// FetchURLArgs are the arguments of fetch_url.
type FetchURLArgs struct {
	URL string `json:"url"`
}

// FetchURLResult is the result of fetch_url.
type FetchURLResult struct {
	Status      int    `json:"status"`
	ContentType string `json:"contentType"`
	Content     string `json:"content"`
}

// FileSearchArgs are the arguments of file_search.
type FileSearchArgs struct {
	Query string `json:"query"`
	// Limit, when set, is 1–100.
	Limit *int `json:"limit,omitempty"`
}

// FileSearchHit is one passage found by file_search.
type FileSearchHit struct {
	FileID  string `json:"fileId"`
	Path    string `json:"path"`
	Snippet string `json:"snippet"`
}

// FileSearchResult is the result of file_search. Nil Hits are written as [].
type FileSearchResult struct {
	Hits []FileSearchHit `json:"hits"`
}

// MarshalJSON writes nil Hits as an empty array.
func (r FileSearchResult) MarshalJSON() ([]byte, error) {
	type plain FileSearchResult
	if r.Hits == nil {
		r.Hits = []FileSearchHit{}
	}
	return json.Marshal(plain(r))
}

// ReadFileArgs are the arguments of read_file.
type ReadFileArgs struct {
	Path string `json:"path"`
	// Offset, when set, is a byte offset ≥ 0.
	Offset *int64 `json:"offset,omitempty"`
	// Length, when set, is a byte count ≥ 0.
	Length *int64 `json:"length,omitempty"`
}

// ReadFileResult is the result of read_file.
type ReadFileResult struct {
	Content   string `json:"content"`
	Truncated bool   `json:"truncated"`
}

// WriteFileArgs are the arguments of write_file.
type WriteFileArgs struct {
	Path    string `json:"path"`
	Content string `json:"content"`
	// Append, when set, says whether to append rather than replace.
	Append *bool `json:"append,omitempty"`
}

// WriteFileResult is the result of write_file.
type WriteFileResult struct {
	// BytesWritten is ≥ 0.
	BytesWritten int64 `json:"bytesWritten"`
}

// ListFilesArgs are the arguments of list_files.
type ListFilesArgs struct {
	Path string `json:"path"`
	// Recursive, when set, says whether to descend into subdirectories.
	Recursive *bool `json:"recursive,omitempty"`
}

// FileEntry is one entry of a list_files result.
type FileEntry struct {
	Path string    `json:"path"`
	Kind EntryKind `json:"kind"`
	// Size, when set, is a byte count ≥ 0.
	Size *int64 `json:"size,omitempty"`
}

// ListFilesResult is the result of list_files. Nil Entries are written as [].
type ListFilesResult struct {
	Entries []FileEntry `json:"entries"`
}

// MarshalJSON writes nil Entries as an empty array.
func (r ListFilesResult) MarshalJSON() ([]byte, error) {
	type plain ListFilesResult
	if r.Entries == nil {
		r.Entries = []FileEntry{}
	}
	return json.Marshal(plain(r))
}

// RunCodeArgs are the arguments of run_code.
type RunCodeArgs struct {
	Language string `json:"language"`
	Code     string `json:"code"`
}

// RunCodeResult is the result of run_code.
type RunCodeResult struct {
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
	ExitCode int    `json:"exitCode"`
}

// ShellArgs are the arguments of shell.
type ShellArgs struct {
	Command string `json:"command"`
	// WorkingDirectory is omitted when empty.
	WorkingDirectory string `json:"workingDirectory,omitempty"`
}

// ShellResult is the result of shell.
type ShellResult struct {
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
	ExitCode int    `json:"exitCode"`
}

// ApplyPatchArgs are the arguments of apply_patch.
type ApplyPatchArgs struct {
	Patch string `json:"patch"`
}

// ApplyPatchResult is the result of apply_patch. Nil UpdatedPaths are
// written as [].
type ApplyPatchResult struct {
	UpdatedPaths []string `json:"updatedPaths"`
}

// MarshalJSON writes nil UpdatedPaths as an empty array.
func (r ApplyPatchResult) MarshalJSON() ([]byte, error) {
	type plain ApplyPatchResult
	if r.UpdatedPaths == nil {
		r.UpdatedPaths = []string{}
	}
	return json.Marshal(plain(r))
}
