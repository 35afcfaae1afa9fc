package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/redact"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// A command step (scenario.Command) is played like the built-in faults: its
// inject command is the fault's call (the fault event is timed from its
// start, as kill's is: its effect lands while it runs), its down is waited
// out the same way, and its recover command is its recovery, followed by
// the same wait for AMQP logins. Each command's run (exit code, duration,
// the end of its output) goes into the fault record.

// commandSlack is added to a command's timeout for the context it runs
// under: the port kills the command at its timeout, and needs a moment to
// collect what it wrote.
const commandSlack = 5 * time.Second

// runCommand runs one of f's commands (step "inject" or "recover") through
// the Commands port, under a deadline of its own that ignores Ctrl-C (a
// fault half applied is the worst outcome), records it in rec and returns
// the event's detail; a command that failed (non-zero exit, killed at its
// timeout, not started) fails the step with its error.
func (in *injector) runCommand(ctx context.Context, f *scenario.Fault, rec *scenario.FaultRecord, step string, argv []string) (string, error) {
	shown := scenario.CommandLine(argv)
	if in.ports.Commands == nil {
		return step + " command " + shown, errNoPort
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.Timeout.D()+commandSlack)
	defer cancel()
	run := in.ports.Commands.Run(cctx, argv, f.Timeout.D())
	run.Step = step
	rec.Commands = append(rec.Commands, run)
	took := time.Duration(run.DurationMS * float64(time.Millisecond)).Round(time.Millisecond)
	in.log.Info("command ran", "step", step, "command", shown, "exit", run.ExitCode, "took", took)
	if run.Error != "" {
		return step + " command " + shown, fmt.Errorf("%s command %s: %s", step, shown, run.Error)
	}
	return fmt.Sprintf("%s command %s exited 0 after %s", step, shown, took), nil
}

// recoverCommand is a command step's recovery after its down: its recover
// command (when it has one), recorded as broker-started when it returns,
// then the wait until the broker accepts AMQP logins on the step's ready
// URIs (none: the run's own broker), recorded as broker-ready or
// broker-not-ready. When the next step fires after_start, nobody waits for
// logins.
func (in *injector) recoverCommand(ctx context.Context, f *scenario.Fault, rec *scenario.FaultRecord) (string, error) {
	detail := "no recover command"
	if len(f.Recover) > 0 {
		var err error
		if detail, err = in.runCommand(ctx, f, rec, "recover", f.Recover); err != nil {
			in.event(time.Time{}, metrics.EvBrokerNotReady, f.Action, redact.Text(err.Error()))
			return detail, err
		}
		in.event(time.Time{}, metrics.EvBrokerStarted, f.Action, "recover command returned")
	}
	if in.nextOnStart {
		in.booting(f.Action)
		return detail, nil
	}
	if in.ports.Commands == nil {
		return detail, errNoPort
	}
	timeout := in.s.Broker.ReadyTimeout.D()
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout+commandSlack)
	defer cancel()
	var partitioned *PartitionError
	if err := in.ports.Commands.WaitReady(rctx, f.Ready, timeout); errors.As(err, &partitioned) {
		// Every node takes logins: the partition is the broker's finding,
		// and the burst and the drain go on through the nodes.
		in.partitionSeen(partitioned, f.Action)
	} else if err != nil {
		in.event(time.Time{}, metrics.EvBrokerNotReady, f.Action, err.Error())
		return detail, fmt.Errorf("broker not back after the command step: %w", err)
	}
	in.event(time.Time{}, metrics.EvBrokerReady, f.Action, "")
	where := "the run's broker"
	if len(f.Ready) > 0 {
		where = fmt.Sprintf("%d ready URIs", len(f.Ready))
	}
	return detail + "; " + where + " accepted AMQP logins again", nil
}
