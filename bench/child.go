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
	"syscall"
	"time"
)

// child is a server under test running in its own process, so that its
// memory can be read alone and nothing it allocates slows the load
// generator's garbage collector or the other way round.
type child struct {
	name string
	cmd  *exec.Cmd
	// stdin, when set, ends the child when closed (the bench's own
	// servers); a peer is ended with SIGTERM instead.
	stdin   io.WriteCloser
	logPath string
	// exited is closed once the process has ended, with waitErr.
	exited  chan struct{}
	waitErr error
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
	if o.exe != "" {
		exe, err = o.exe, nil
	}
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
	if o.fault != "" {
		args = append(args, "-fault", o.fault)
	}
	if o.path != "" {
		args = append(args, "-path", o.path)
	}
	logf, err := os.CreateTemp(dir, o.kind+"-*.log")
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	c := &child{name: o.kind, cmd: exec.Command(exe, args...), logPath: logf.Name()}
	c.cmd.Stderr = logf
	if len(o.env) > 0 {
		c.cmd.Env = append(os.Environ(), o.env...)
	}
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
	c.watch()
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

// stop ends the child and waits: it closes the standard input of one of
// the bench's own servers, and sends SIGTERM to a peer (whose exit status
// after it is not an error). A child still running 10 s later is killed.
func (c *child) stop() error {
	c.resume() // a stopped process would not act on its end until continued
	if c.stdin != nil {
		c.stdin.Close()
	} else {
		_ = c.cmd.Process.Signal(syscall.SIGTERM)
	}
	select {
	case <-c.exited:
		if c.waitErr != nil && c.stdin != nil {
			return fmt.Errorf("server %s: %w%s", c.name, c.waitErr, c.tail())
		}
		return nil
	case <-time.After(10 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.exited
		return fmt.Errorf("server %s did not stop within 10s", c.name)
	}
}

// pause stops the child's processes (SIGSTOP) while other servers are
// measured, so that none of its threads (a JIT compiler, a collector, a
// timer) runs on the shared cores in another server's turn; resume
// continues them.
func (c *child) pause()  { c.signal(syscall.SIGSTOP) }
func (c *child) resume() { c.signal(syscall.SIGCONT) }

func (c *child) signal(sig syscall.Signal) {
	for _, pid := range c.tree() {
		_ = syscall.Kill(pid, sig)
	}
}

// watch waits for the started process in the background, so that its end
// is noticed (exited) and it is reaped.
func (c *child) watch() {
	c.exited = make(chan struct{})
	go func() {
		c.waitErr = c.cmd.Wait()
		close(c.exited)
	}()
}

// tree is the child's process and every process below it (a peer's
// wrapper may start the server as its own child).
func (c *child) tree() []int {
	pids := []int{c.cmd.Process.Pid}
	for k := 0; k < len(pids); k++ {
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pids[k]))
		for _, t := range tasks {
			b, _ := os.ReadFile(t)
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil {
					pids = append(pids, pid)
				}
			}
		}
	}
	return pids
}

// cpu is the CPU time the child and its descendants have used so far
// (user and system).
func (c *child) cpu() (time.Duration, error) {
	var sum time.Duration
	for k, pid := range c.tree() {
		d, err := procCPU(pid)
		if err != nil && k == 0 {
			return 0, err
		}
		sum += d
	}
	return sum, nil
}

// procCPU is the CPU time process pid has used so far.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
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

// mem reads the memory of the child and its descendants, summed.
func (c *child) mem() (memStatus, error) {
	var sum memStatus
	for k, pid := range c.tree() {
		m, err := readStatus(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			if k == 0 {
				return sum, err
			}
			continue
		}
		sum.RSS += m.RSS
		sum.HWM += m.HWM
		sum.Anon += m.Anon
		sum.File += m.File
	}
	return sum, nil
}

// selfCPU is the CPU time this process (the load generator) has used.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
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
