package presets

// The twelve presets, in catalogue order (calculator first, apply_patch
// last). Each pairs its descriptor with the Go types of its arguments and
// result.
var (
	Calculator = Preset[CalculatorArgs, CalculatorResult]{newDescriptor(
		"calculator",
		"Evaluate an arithmetic expression and return its numeric value.",
		[]field{
			req("expression", str(`The arithmetic expression, for example "(2 + 3) * 7".`)),
		},
		object("The value of the expression.",
			req("value", number("The numeric value.")),
		),
	)}

	CurrentTime = Preset[CurrentTimeArgs, CurrentTimeResult]{newDescriptor(
		"current_time",
		"Return the current date and time in a time zone.",
		[]field{
			req("timeZone", str(`An IANA time zone name, for example "Europe/Paris".`)),
		},
		object("The current time.",
			req("timestamp", str("The current time as an RFC 3339 timestamp with its UTC offset.").with("format", "date-time")),
			req("timeZone", str("The time zone of the timestamp.")),
		),
	)}

	Weather = Preset[WeatherArgs, WeatherResult]{newDescriptor(
		"weather",
		"Report the current weather at a location.",
		[]field{
			req("location", str(`A place name, for example "Paris".`)),
			opt("unit", oneOf("The temperature unit.", string(Celsius), string(Fahrenheit))),
		},
		object("The current weather.",
			req("location", str("The place the weather is for.")),
			req("temperature", number("The temperature in the given unit.")),
			req("unit", oneOf("The temperature unit.", string(Celsius), string(Fahrenheit))),
			req("condition", str(`A short description, for example "sunny".`)),
		),
	)}

	WebSearch = Preset[WebSearchArgs, WebSearchResult]{newDescriptor(
		"web_search",
		"Search the web and return the best matching pages.",
		[]field{
			req("query", str("The search query.")),
			opt("limit", integer("The largest number of hits to return.").with("minimum", 1).with("maximum", 100)),
		},
		object("The pages found.",
			req("hits", array("The hits, best first.", object("One page.",
				req("title", str("The page title.")),
				req("url", str("The page URL.")),
				req("snippet", str("A passage of the page that matches the query.")),
			))),
		),
	)}

	FetchURL = Preset[FetchURLArgs, FetchURLResult]{newDescriptor(
		"fetch_url",
		"Fetch a URL and return the response body as text.",
		[]field{
			req("url", str("The URL to fetch.")),
		},
		object("The response.",
			req("status", integer("The HTTP status code.")),
			req("contentType", str("The media type of the content.")),
			req("content", str("The response body as text.")),
		),
	)}

	FileSearch = Preset[FileSearchArgs, FileSearchResult]{newDescriptor(
		"file_search",
		"Search files for text and return the matching passages.",
		[]field{
			req("query", str("The search query.")),
			opt("limit", integer("The largest number of hits to return.").with("minimum", 1).with("maximum", 100)),
		},
		object("The passages found.",
			req("hits", array("The hits, best first.", object("One passage.",
				req("fileId", str("An identifier of the file.")),
				req("path", str("The path of the file.")),
				req("snippet", str("The matching passage.")),
			))),
		),
	)}

	ReadFile = Preset[ReadFileArgs, ReadFileResult]{newDescriptor(
		"read_file",
		"Read a text file, or part of it.",
		[]field{
			req("path", str("The path of the file.")),
			opt("offset", integer("The byte offset to start reading at.").with("minimum", 0)),
			opt("length", integer("The largest number of bytes to read.").with("minimum", 0)),
		},
		object("What was read.",
			req("content", str("The text read.")),
			req("truncated", boolean("Whether the file continues past the returned content.")),
		),
	)}

	WriteFile = Preset[WriteFileArgs, WriteFileResult]{newDescriptor(
		"write_file",
		"Write text to a file, replacing it or appending to it.",
		[]field{
			req("path", str("The path of the file.")),
			req("content", str("The text to write.")),
			opt("append", boolean("Append to the file instead of replacing it.")),
		},
		object("A receipt for the write.",
			req("bytesWritten", integer("The number of bytes written.").with("minimum", 0)),
		),
	)}

	ListFiles = Preset[ListFilesArgs, ListFilesResult]{newDescriptor(
		"list_files",
		"List the files and directories under a path.",
		[]field{
			req("path", str("The directory to list.")),
			opt("recursive", boolean("Also list the contents of subdirectories.")),
		},
		object("The entries found.",
			req("entries", array("The entries.", object("One entry.",
				req("path", str("The path of the entry.")),
				req("kind", oneOf("Whether the entry is a file or a directory.", string(KindFile), string(KindDirectory))),
				opt("size", integer("The size in bytes.").with("minimum", 0)),
			))),
		),
	)}

	RunCode = Preset[RunCodeArgs, RunCodeResult]{newDescriptor(
		"run_code",
		"Run a snippet of code and return its output.",
		[]field{
			req("language", str(`The programming language, for example "python".`)),
			req("code", str("The source code to run.")),
		},
		object("The outcome of the run.",
			req("stdout", str("What the program wrote to standard output.")),
			req("stderr", str("What the program wrote to standard error.")),
			req("exitCode", integer("The exit status.")),
		),
	)}

	Shell = Preset[ShellArgs, ShellResult]{newDescriptor(
		"shell",
		"Run a shell command and return its output.",
		[]field{
			req("command", str("The command line to run.")),
			opt("workingDirectory", str("The directory to run the command in.")),
		},
		object("The outcome of the command.",
			req("stdout", str("What the command wrote to standard output.")),
			req("stderr", str("What the command wrote to standard error.")),
			req("exitCode", integer("The exit status.")),
		),
	)}

	ApplyPatch = Preset[ApplyPatchArgs, ApplyPatchResult]{newDescriptor(
		"apply_patch",
		"Apply a patch to files and report which files changed.",
		[]field{
			req("patch", str("The patch text.")),
		},
		object("A receipt for the patch.",
			req("updatedPaths", array("The paths of the files the patch changed.", str(""))),
		),
	)}
)

// All returns the catalogue: every preset's descriptor, in a fixed order
// (calculator first, apply_patch last). The slice is the caller's own.
func All() []Descriptor {
	return []Descriptor{
		Calculator.Descriptor,
		CurrentTime.Descriptor,
		Weather.Descriptor,
		WebSearch.Descriptor,
		FetchURL.Descriptor,
		FileSearch.Descriptor,
		ReadFile.Descriptor,
		WriteFile.Descriptor,
		ListFiles.Descriptor,
		RunCode.Descriptor,
		Shell.Descriptor,
		ApplyPatch.Descriptor,
	}
}

// Lookup returns the preset with the given function name.
func Lookup(name string) (Descriptor, bool) {
	for _, d := range All() {
		if d.Name() == name {
			return d, true
		}
	}
	return Descriptor{}, false
}
