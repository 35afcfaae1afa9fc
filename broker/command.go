package broker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/rmqtorture/rmqtorture/redact"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// Commands runs the programs of a command step (engine.Commands) with
// os/exec: no shell, each in a process group of its own so that its
// timeout kills what it started too, stdin empty, stdout and stderr kept
// to their last scenario.CommandOutputBytes.
type Commands struct {
	// Env are the run's facts, "NAME=value", added to rmqtorture's own
	// environment for every command (RMQT_RUN_ID, RMQT_CONTAINER…).
	Env []string
	// Ready waits until the run's own broker accepts AMQP logins, for a
	// step that names no ready URIs; nil: such a step fails its wait.
	Ready func(ctx context.Context, timeout time.Duration) error
}

// pipesGrace is how long Run waits for a command's output after it
// exited (or was killed) when something it started still holds its
// stdout or stderr open (os/exec's WaitDelay).
const pipesGrace = 2 * time.Second

// Run runs argv within timeout (see engine.Commands). What it records is
// safe to print: URL passwords in the argv and the output are replaced by
// "xxxxx", terminal control sequences removed.
func (c *Commands) Run(ctx context.Context, argv []string, timeout time.Duration) scenario.CommandRun {
	run := scenario.CommandRun{ExitCode: -1}
	for _, a := range argv {
		run.Argv = append(run.Argv, redact.Text(a))
	}
	if len(argv) == 0 || argv[0] == "" {
		run.Error = "could not start: no program named"
		return run
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), c.Env...)
	// The whole group: `sh -c "…"` or a script leaves children that a
	// kill of its own process would orphan, still acting on the broker.
	killGroupOnCancel(cmd)
	cmd.WaitDelay = pipesGrace
	var stdout, stderr tailBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	began := time.Now()
	err := cmd.Run()
	run.DurationMS = float64(time.Since(began).Microseconds()) / 1000
	run.Stdout, run.StdoutCutBytes = stdout.text()
	run.Stderr, run.StderrCutBytes = stderr.text()
	if cmd.ProcessState != nil {
		run.ExitCode = cmd.ProcessState.ExitCode()
	}
	var exit *exec.ExitError
	switch {
	case err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		run.Error = fmt.Sprintf("killed at its %s timeout (with its process group)", timeout)
		run.ExitCode = -1
	case err == nil, errors.Is(err, exec.ErrWaitDelay) && run.ExitCode == 0:
		// Exited 0; something it started may still hold its output.
	case errors.As(err, &exit):
		run.Error = redact.Text(exit.Error()) // "exit status 1", "signal: killed"
	case run.ExitCode >= 0:
		run.Error = redact.Text(err.Error())
	default:
		run.Error = "could not start: " + redact.Text(err.Error())
	}
	return run
}

// WaitReady waits until every one of uris accepts an AMQP login (none:
// the run's own broker, Ready), all within one timeout. Its errors name
// no password.
func (c *Commands) WaitReady(ctx context.Context, uris []string, timeout time.Duration) error {
	if len(uris) == 0 {
		if c.Ready == nil {
			return errors.New("no broker to wait for: name it in ready")
		}
		return c.Ready(ctx, timeout)
	}
	deadline := time.Now().Add(timeout)
	for i, raw := range uris {
		ext, err := NewExternal(raw)
		if err != nil {
			return fmt.Errorf("ready[%d]: %w", i, err)
		}
		if err := ext.WaitReady(ctx, max(time.Until(deadline), time.Millisecond)); err != nil {
			return fmt.Errorf("ready[%d] (%s): %w", i, ext.Redacted, err)
		}
	}
	return nil
}

// tailBuffer keeps the last scenario.CommandOutputBytes written to it and
// counts the bytes it dropped before them. os/exec writes to it from one
// goroutine per stream.
type tailBuffer struct {
	buf []byte
	cut int64
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - scenario.CommandOutputBytes; over > 0 {
		t.cut += int64(over)
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return n, nil
}

// text is what was kept, safe to print, and how many bytes were dropped.
// Output cut at its front starts at its first whole line: a URL cut in
// two would keep its password where redact.Text no longer sees a URL.
func (t *tailBuffer) text() (string, int64) {
	b, cut := t.buf, t.cut
	if cut > 0 {
		if i := strings.IndexByte(string(b), '\n'); i >= 0 {
			b, cut = b[i+1:], cut+int64(i+1)
		}
	}
	return redact.Foreign(strings.ToValidUTF8(string(b), "\uFFFD")), cut
}
