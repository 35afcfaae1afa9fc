//go:build !unix

package broker

import "os/exec"

// killGroupOnCancel leaves cmd's cancellation as exec's own, a kill of its
// process: Windows has no process groups to signal, so a child the
// command started may outlive it (docs/faults.md, "command").
func killGroupOnCancel(*exec.Cmd) {}
