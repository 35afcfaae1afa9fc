package broker

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// A command runs without a shell, with the run's facts in its environment;
// its exit code, output and duration are recorded, URL passwords redacted
// in its argv and output.
func TestCommandsRunRecords(t *testing.T) {
	c := &Commands{Env: []string{"RMQT_CONTAINER=rmqt-abc"}}
	run := c.Run(context.Background(), []string{"sh", "-c", `echo "kill $RMQT_CONTAINER amqp://bob:s3cret@h:5672/"; echo oops >&2; exit 3`, "amqp://u:pw@x/"}, 10*time.Second)
	if run.ExitCode != 3 || run.Error != "exit status 3" || run.Stdout != "kill rmqt-abc amqp://bob:xxxxx@h:5672/\n" || run.Stderr != "oops\n" ||
		run.Argv[3] != "amqp://u:xxxxx@x/" || run.DurationMS <= 0 {
		t.Fatalf("run %+v", run)
	}
	ok := c.Run(context.Background(), []string{"true"}, 10*time.Second)
	if ok.ExitCode != 0 || ok.Error != "" {
		t.Fatalf("true: %+v", ok)
	}
}

// At its timeout the command's whole process group is killed (a
// background child too, which holds its output open) and the step fails.
func TestCommandsRunTimeoutKillsGroup(t *testing.T) {
	began := time.Now()
	run := (&Commands{}).Run(context.Background(), []string{"sh", "-c", "echo started; sleep 30 & sleep 30"}, 300*time.Millisecond)
	if took := time.Since(began); took > 5*time.Second {
		t.Fatalf("took %s: the group was not killed", took)
	}
	if run.ExitCode != -1 || run.Error != "killed at its 300ms timeout (with its process group)" || run.Stdout != "started\n" {
		t.Fatalf("run %+v", run)
	}
}

// A program that does not exist fails to start, named in the error.
func TestCommandsRunNotFound(t *testing.T) {
	run := (&Commands{}).Run(context.Background(), []string{"rmqt-no-such-program"}, time.Second)
	if run.ExitCode != -1 || !strings.HasPrefix(run.Error, `could not start: exec: "rmqt-no-such-program": executable file not found`) {
		t.Fatalf("run %+v", run)
	}
}

// Output beyond CommandOutputBytes keeps its end from the first whole
// line on, and counts what was dropped.
func TestCommandsOutputTail(t *testing.T) {
	var b tailBuffer
	line := strings.Repeat("x", 99) + "\n" // 100 bytes
	for range 200 {
		_, _ = b.Write([]byte(line))
	}
	text, cut := b.text()
	kept := scenario.CommandOutputBytes / 100 * 100 // whole lines in the tail
	if int64(len(text))+cut != 20000 || len(text) != kept || !strings.HasPrefix(text, "xxx") {
		t.Fatalf("kept %d bytes, cut %d: want %d kept from a line's start", len(text), cut, kept)
	}
}

// WaitReady refuses a ready URI that is not one without quoting it, and
// waits for the run's own broker when none is named.
func TestCommandsWaitReady(t *testing.T) {
	c := &Commands{Ready: func(context.Context, time.Duration) error { return nil }}
	if err := c.WaitReady(context.Background(), nil, time.Second); err != nil {
		t.Fatal(err)
	}
	err := c.WaitReady(context.Background(), []string{"http://u:s3cret@h/"}, time.Second)
	if err == nil || strings.Contains(err.Error(), "s3cret") || !strings.HasPrefix(err.Error(), "ready[0]: not an AMQP URI") {
		t.Fatalf("err %v", err)
	}
}
