package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// child is a server under test running in its own process, so that its
// memory can be read alone and nothing it allocates slows the load
// generator's garbage collector or the other way round.
type child struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	logPath string
	// URL is the server's base URL.
	URL string
	// Started is when the process was started; Ready when it printed its
	// address; Open how long it spent opening the cassette.
	Started, Ready time.Time
	Open           time.Duration
}

// startChild re-executes the bench binary as a server of the given kind.
// Its log goes to a file in dir.
func startChild(dir string, o serveOptions) (*child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	args := []string{"-serve", o.kind}
	if o.cassette != "" {
		args = append(args, "-cassette", o.cassette)
	}
	if o.upstream != "" {
		args = append(args, "-upstream", o.upstream)
	}
	if o.cpuprofile != "" {
		args = append(args, "-cpuprofile", o.cpuprofile)
	}
	logf, err := os.CreateTemp(dir, o.kind+"-*.log")
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	c := &child{cmd: exec.Command(exe, args...), logPath: logf.Name()}
	c.cmd.Stderr = logf
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	c.Started = time.Now()
	if err := c.cmd.Start(); err != nil {
		return nil, err
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	c.Ready = time.Now()
	f := strings.Fields(line)
	if err != nil || len(f) != 3 || f[0] != "ready" {
		c.stop()
		return nil, fmt.Errorf("server %s did not start: %q: %v%s", o.kind, line, err, c.tail())
	}
	ms, _ := strconv.ParseFloat(f[2], 64)
	c.Open = time.Duration(ms * float64(time.Millisecond))
	c.URL = "http://" + f[1]
	return c, nil
}

// tail is the end of the child's log, for error messages.
func (c *child) tail() string {
	b, _ := os.ReadFile(c.logPath)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return ""
	}
	return "\n" + filepath.Base(c.logPath) + ":\n" + string(b)
}

// stop closes the child's standard input, which ends it, and waits.
func (c *child) stop() error {
	c.stdin.Close()
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("server %s: %w%s", c.cmd.Args[2], err, c.tail())
		}
		return nil
	case <-time.After(10 * time.Second):
		_ = c.cmd.Process.Kill()
		<-done
		return fmt.Errorf("server %s did not stop within 10s", c.cmd.Args[2])
	}
}

// cpu is the CPU time the child has used so far (user and system).
func (c *child) cpu() (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", c.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	// The fields after the command name, which is in parentheses and may
	// hold spaces: utime and stime are the 12th and 13th of them, in clock
	// ticks (100 per second on Linux).
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc stat: %q", s)
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	k, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("bad /proc stat: %q", s)
	}
	return time.Duration(u+k) * 10 * time.Millisecond, nil
}

// memStatus is the memory of a process as /proc/PID/status reports it.
type memStatus struct {
	RSS, HWM, Anon, File int64 // bytes: VmRSS, VmHWM, RssAnon, RssFile
}

// mem reads the child's memory.
func (c *child) mem() (memStatus, error) {
	return readStatus(fmt.Sprintf("/proc/%d/status", c.cmd.Process.Pid))
}

func readStatus(path string) (memStatus, error) {
	var m memStatus
	b, err := os.ReadFile(path)
	if err != nil {
		return m, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		var dst *int64
		switch k {
		case "VmRSS":
			dst = &m.RSS
		case "VmHWM":
			dst = &m.HWM
		case "RssAnon":
			dst = &m.Anon
		case "RssFile":
			dst = &m.File
		default:
			continue
		}
		f := strings.Fields(v)
		if len(f) == 2 && f[1] == "kB" {
			n, _ := strconv.ParseInt(f[0], 10, 64)
			*dst = n << 10
		}
	}
	return m, nil
}
