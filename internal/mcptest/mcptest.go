// Package mcptest is an MCP server built with the official Go SDK, for
// tests: its tool write_note writes a file, a side effect a test can see
// happen in record and not in replay.
package mcptest

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// NoteArgs are write_note's arguments.
type NoteArgs struct {
	Path string `json:"path" jsonschema:"the file's name inside the notes directory"`
	Text string `json:"text" jsonschema:"what to write"`
}

// NoteResult is write_note's structured result.
type NoteResult struct {
	Bytes int    `json:"bytes"`
	Path  string `json:"path"`
}

// FileArgs are save_file's arguments, those of the preset write_file.
type FileArgs struct {
	Path    string `json:"path" jsonschema:"the file's name inside the directory"`
	Content string `json:"content" jsonschema:"what to write"`
}

// FileResult is save_file's structured result, the preset write_file's.
type FileResult struct {
	BytesWritten int `json:"bytesWritten"`
}

// NewServer is an MCP server whose tools write_note and save_file write
// files into dir (save_file is shaped as the preset write_file, and fails
// with isError on a path that leaves dir), and whose tool echo returns its
// text.
func NewServer(dir string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "save_file", Description: "Saves a file."},
		func(_ context.Context, _ *mcp.CallToolRequest, in FileArgs) (*mcp.CallToolResult, FileResult, error) {
			name := filepath.Base(in.Path)
			if name != in.Path || name == "." || strings.HasPrefix(name, "..") {
				return nil, FileResult{}, fmt.Errorf("bad path %q", in.Path)
			}
			if err := os.WriteFile(filepath.Join(dir, name), []byte(in.Content), 0o600); err != nil {
				return nil, FileResult{}, err
			}
			return nil, FileResult{BytesWritten: len(in.Content)}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "write_note", Description: "Writes a note to a file."},
		func(_ context.Context, _ *mcp.CallToolRequest, in NoteArgs) (*mcp.CallToolResult, NoteResult, error) {
			name := filepath.Base(in.Path)
			if name == "." || name == "/" || strings.HasPrefix(name, "..") {
				return nil, NoteResult{}, fmt.Errorf("bad path %q", in.Path)
			}
			if err := os.WriteFile(filepath.Join(dir, name), []byte(in.Text), 0o600); err != nil {
				return nil, NoteResult{}, err
			}
			return nil, NoteResult{Bytes: len(in.Text), Path: name}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Returns its text."},
		func(_ context.Context, _ *mcp.CallToolRequest, in NoteArgs) (*mcp.CallToolResult, NoteResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, NoteResult{Bytes: len(in.Text)}, nil
		})
	return s
}

// Handler serves NewServer(dir) over streamable HTTP; jsonAnswers makes it
// answer POSTs with application/json instead of an SSE stream.
func Handler(dir string, jsonAnswers bool) http.Handler {
	s := NewServer(dir)
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{JSONResponse: jsonAnswers})
}

// RunStdio serves NewServer(dir) over stdin and stdout until stdin ends.
func RunStdio(ctx context.Context, dir string) error {
	return NewServer(dir).Run(ctx, &mcp.StdioTransport{})
}

// Round is what a client saw of one session: the tools listed and the
// answer to write_note.
type Round struct {
	Tools  []string
	Result string // the call's text content and structured content
}

// Connect opens a client session over t.
func Connect(ctx context.Context, t mcp.Transport) (*mcp.ClientSession, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1.0.0"}, nil)
	return c.Connect(ctx, t, nil)
}

// Play runs initialize, tools/list and tools/call write_note(path, text)
// over t, and closes the session.
func Play(ctx context.Context, t mcp.Transport, path, text string) (Round, error) {
	cs, err := Connect(ctx, t)
	if err != nil {
		return Round{}, fmt.Errorf("connect: %w", err)
	}
	defer cs.Close()
	var r Round
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		return r, fmt.Errorf("tools/list: %w", err)
	}
	for _, t := range tools.Tools {
		r.Tools = append(r.Tools, t.Name)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "write_note", Arguments: NoteArgs{Path: path, Text: text}})
	if err != nil {
		return r, fmt.Errorf("tools/call: %w", err)
	}
	r.Result = ResultText(res)
	return r, nil
}

// ResultText is a tool result's text contents and structured content, for
// comparison.
func ResultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
			b.WriteString("\n")
		}
	}
	fmt.Fprintf(&b, "structured: %v error: %v", res.StructuredContent, res.IsError)
	return b.String()
}
