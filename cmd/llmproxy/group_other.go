//go:build !unix

package main

import (
	"os"
	"os/exec"
)

// ownGroup leaves CMD where it is: without process groups, signals go to
// CMD alone.
func ownGroup(*exec.Cmd, *os.File) bool { return false }

// signalGroup sends s to CMD (or kills it where s cannot be sent).
func signalGroup(p *os.Process, _ bool, s os.Signal) { forward(p, s) }

// killGroup kills CMD.
func killGroup(p *os.Process, _ bool) { _ = p.Kill() }
