//go:build unix

package main

import (
	"errors"
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// ownGroup puts CMD in a process group of its own, so that a signal and
// the final kill reach every process CMD started, unless stdin is a
// terminal: there CMD stays in the terminal's foreground group, which the
// terminal signals whole (Ctrl-C), and can read the terminal. It reports
// whether CMD has its own group.
func ownGroup(cmd *exec.Cmd, stdin *os.File) bool {
	if _, err := unix.IoctlGetWinsize(int(stdin.Fd()), unix.TIOCGWINSZ); err == nil {
		return false
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return true
}

// signalGroup sends s to CMD's process group when it has one, else to CMD.
func signalGroup(p *os.Process, group bool, s os.Signal) {
	if sig, ok := s.(syscall.Signal); ok && group {
		if err := syscall.Kill(-p.Pid, sig); err == nil || errors.Is(err, syscall.ESRCH) {
			return
		}
	}
	forward(p, s)
}

// killGroup kills CMD's process group, or CMD alone when it has none.
func killGroup(p *os.Process, group bool) { signalGroup(p, group, syscall.SIGKILL) }
