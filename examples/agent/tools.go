package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/llmproxy/llmproxy/presets"
	"github.com/llmproxy/llmproxy/wire"
)

// LocalTools are the agent's real tools, working in Dir ("" is the current
// directory):
//
//   - write_file writes (or appends) content to a file, at a path relative
//     to Dir that stays inside it;
//   - shell runs a command with sh -c in Dir (or in workingDirectory,
//     relative to Dir) and reports its output and exit code.
//
// A tool that cannot do its job answers with the presets' error envelope,
// as a tool result the model can read; only an unknown tool is a Go error.
type LocalTools struct {
	Dir string
}

// Execute runs one call.
func (t LocalTools) Execute(ctx context.Context, call wire.ToolCall) (wire.ToolResult, error) {
	var out any
	var toolErr *presets.ToolError
	switch call.Name {
	case presets.WriteFile.Name():
		out, toolErr = t.writeFile(call.Arguments)
	case presets.Shell.Name():
		out, toolErr = t.shell(ctx, call.Arguments)
	default:
		return wire.ToolResult{}, fmt.Errorf("agent: no tool %q", call.Name)
	}
	if toolErr != nil {
		out = presets.ErrorEnvelope{Error: *toolErr}
	}
	// The application's own JSON: field order as its structs declare it.
	content, err := json.Marshal(out)
	if err != nil {
		return wire.ToolResult{}, err
	}
	return wire.ToolResult{CallID: call.ID, Name: call.Name, Content: content, IsError: toolErr != nil}, nil
}

func failure(code, format string, args ...any) *presets.ToolError {
	return &presets.ToolError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// local resolves a model-given relative path inside t.Dir.
func (t LocalTools) local(p string) (string, *presets.ToolError) {
	if !filepath.IsLocal(p) {
		return "", failure("invalid_path", "path %q must be relative and stay inside the working directory", p)
	}
	return filepath.Join(t.Dir, p), nil
}

func (t LocalTools) writeFile(raw []byte) (any, *presets.ToolError) {
	args, err := presets.WriteFile.ParseArguments(raw)
	if err != nil {
		return nil, failure("invalid_arguments", "%v", err)
	}
	path, terr := t.local(args.Path)
	if terr != nil {
		return nil, terr
	}
	flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	if args.Append != nil && *args.Append {
		flags = os.O_WRONLY | os.O_CREATE | os.O_APPEND
	}
	f, err := os.OpenFile(path, flags, 0o644)
	if err != nil {
		return nil, failure("io_error", "%v", err)
	}
	n, err := f.WriteString(args.Content)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, failure("io_error", "%v", err)
	}
	return presets.WriteFileResult{BytesWritten: int64(n)}, nil
}

func (t LocalTools) shell(ctx context.Context, raw []byte) (any, *presets.ToolError) {
	args, err := presets.Shell.ParseArguments(raw)
	if err != nil {
		return nil, failure("invalid_arguments", "%v", err)
	}
	dir := t.Dir
	if args.WorkingDirectory != "" {
		d, terr := t.local(args.WorkingDirectory)
		if terr != nil {
			return nil, terr
		}
		dir = d
	}
	cmd := exec.CommandContext(ctx, "sh", "-c", args.Command)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
	case err != nil:
		return nil, failure("exec_error", "%v", err)
	}
	return presets.ShellResult{Stdout: stdout.String(), Stderr: stderr.String(), ExitCode: cmd.ProcessState.ExitCode()}, nil
}
