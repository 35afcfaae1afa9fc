package engine

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// fakeCommands plays a command step's commands on the fake broker: a
// command whose program is "kill" kills it, "start" starts it; any other
// exits with fail[program] (0 when absent). It records every argv, timeout
// and ready list.
type fakeCommands struct {
	b        *fakeBroker
	fail     map[string]int
	mu       sync.Mutex
	ran      []string
	timeouts []time.Duration
	ready    [][]string
}

func (c *fakeCommands) Run(ctx context.Context, argv []string, timeout time.Duration) scenario.CommandRun {
	c.mu.Lock()
	c.ran = append(c.ran, strings.Join(argv, " "))
	c.timeouts = append(c.timeouts, timeout)
	code := c.fail[argv[0]]
	c.mu.Unlock()
	switch argv[0] {
	case "kill":
		_ = c.b.Kill(ctx, scenario.BrokerTarget(), "SIGKILL")
	case "start":
		_ = c.b.Start(ctx, scenario.BrokerTarget())
	}
	run := scenario.CommandRun{Argv: argv, ExitCode: code, DurationMS: 2, Stdout: argv[0] + " done\n"}
	if code != 0 {
		run.Error = "exit status 3"
		run.Stderr = "no such container\n"
	}
	return run
}

func (c *fakeCommands) WaitReady(ctx context.Context, uris []string, timeout time.Duration) error {
	c.mu.Lock()
	c.ready = append(c.ready, uris)
	c.mu.Unlock()
	return c.b.WaitReady(ctx, scenario.BrokerTarget(), timeout)
}

// commandKillStart is a 50-order confirm-window burst with one command
// step that kills the fake broker with 10 in flight and starts it 50 ms
// later (fakeCommands).
const commandKillStart = `version: 1
scenarios:
  - name: t
    queue: {settle_before_burst: 0s}
    load: {messages: 50, window: 10, modes: [confirm-window]}
    faults: [{action: command, inject: [kill, broker], recover: [start, broker], in_flight: 10, down: 50ms, timeout: 7s}]
`

// A command step that kills and starts the broker is played like kill: the
// inject command at the trigger, the recover command after down, then the
// wait for AMQP logins; the publisher's in-doubt window is republished and
// none is lost; both commands' runs are in the fault record, the timeline
// has the fault, broker-started, broker-ready and fault-cleared events, and
// the recovery is timed from them. The series marks no broker state.
func TestCommandStepKillsAndRecoversLikeKill(t *testing.T) {
	f := mustParse(t, commandKillStart)
	b := &fakeBroker{}
	cmds := &fakeCommands{b: b}
	r := newRunner(b, &fakeTraffic{b: b, holdAt: 10})
	r.Ports.Commands, r.Bucket = cmds, 10*time.Millisecond
	res, down := r.RunMode(context.Background(), &f.Scenarios[0], scenario.ConfirmWindow)
	c := res.Counts
	if down || res.Verdict.Status != scenario.Pass || c.Sent != 50 || c.Confirmed != 50 || c.WentInDoubt != 11 || c.Republished != 11 ||
		c.InDoubt != 0 || c.Duplicates != 10 || c.Lost != 0 || res.Reconnects != 1 {
		t.Fatalf("down %v verdict %+v counts %+v reconnects %d", down, res.Verdict, c, res.Reconnects)
	}
	if got := strings.Join(cmds.ran, " / "); got != "kill broker / start broker" {
		t.Fatalf("commands ran %q", got)
	}
	if !slices.Equal(cmds.timeouts, []time.Duration{7 * time.Second, 7 * time.Second}) || len(cmds.ready) != 1 || cmds.ready[0] != nil {
		t.Fatalf("timeouts %v ready %v: want 7s each, one wait on the run's broker", cmds.timeouts, cmds.ready)
	}
	if len(res.Faults) != 1 {
		t.Fatalf("faults %+v", res.Faults)
	}
	rec := res.Faults[0]
	if rec.Action != scenario.Command || rec.InjectMS != 0 || rec.Error != "" || len(rec.Commands) != 2 ||
		rec.Commands[0].Step != "inject" || rec.Commands[1].Step != "recover" || rec.Commands[1].Stdout != "start done\n" {
		t.Fatalf("record %+v", rec)
	}
	var kinds []string
	for _, e := range res.Events {
		if e.Action == string(scenario.Command) {
			kinds = append(kinds, string(e.Kind))
		}
	}
	if got := strings.Join(kinds, " "); got != "trigger fault broker-started broker-ready fault-cleared" {
		t.Fatalf("command events %q", got)
	}
	if r := rec.Recovery; r == nil || r.ContainerRunningMS == nil || r.AMQPAcceptingMS == nil || *r.AMQPAcceptingMS < 50 || r.PublisherReconnectedMS == nil {
		t.Fatalf("recovery %s", show(r))
	}
	if res.Series == nil || slices.Contains(res.Series.Broker, metrics.StateDown) {
		t.Fatalf("series marks the broker down for a command step without state: %v", res.Series)
	}
}

// With state: down, the series marks the broker down from the step until
// AMQP logins succeed again, as for kill, and the record says so.
func TestCommandStepStateMarksSeries(t *testing.T) {
	f := mustParse(t, `version: 1
scenarios:
  - name: t
    queue: {settle_before_burst: 0s}
    load: {messages: 50, window: 10, modes: [confirm-window]}
    faults: [{action: command, inject: [kill, broker], recover: [start, broker], in_flight: 10, down: 100ms, state: down}]
`)
	b := &fakeBroker{}
	r := newRunner(b, &fakeTraffic{b: b, holdAt: 10})
	r.Ports.Commands, r.Bucket = &fakeCommands{b: b}, 10*time.Millisecond
	res, _ := r.RunMode(context.Background(), &f.Scenarios[0], scenario.ConfirmWindow)
	down := 0
	for _, st := range res.Series.Broker {
		if st == metrics.StateDown {
			down++
		}
	}
	// 100 ms down in 10 ms buckets: at least 9 buckets wholly or partly down.
	if res.Verdict.Status != scenario.Pass || res.Faults[0].State != metrics.StateDown || down < 9 {
		t.Fatalf("verdict %+v, state %q, %d buckets down of %v", res.Verdict, res.Faults[0].State, down, res.Series.Broker)
	}
}

// A failing inject command fails the step with its error (the run is
// inconclusive: the broker's state is unknown), and the recover command
// still runs so the broker is not left down; both runs are recorded.
func TestCommandStepFailureRunsRecoverAndIsInconclusive(t *testing.T) {
	f := mustParse(t, `version: 1
scenarios:
  - name: t
    queue: {settle_before_burst: 0s}
    load: {messages: 100, modes: [confirm-window]}
    faults: [{action: command, inject: [fail, x], recover: [start, broker], published: 40, ready: ["amqp://u:secret@127.0.0.1:5673/"]}]
`)
	b := &fakeBroker{}
	cmds := &fakeCommands{b: b, fail: map[string]int{"fail": 3}}
	r := newRunner(b, &fakeTraffic{})
	r.Ports.Commands = cmds
	res, _ := r.RunMode(context.Background(), &f.Scenarios[0], scenario.ConfirmWindow)
	if res.Verdict.Status != scenario.Inconclusive {
		t.Fatalf("verdict %+v", res.Verdict)
	}
	if got := strings.Join(cmds.ran, " / "); got != "fail x / start broker" {
		t.Fatalf("commands ran %q", got)
	}
	rec := res.Faults[0]
	if rec.Error != "inject command fail x: exit status 3" || len(rec.Commands) != 2 || rec.Commands[0].ExitCode != 3 ||
		rec.Commands[0].Stderr != "no such container\n" || len(cmds.ready) != 1 || cmds.ready[0][0] != "amqp://u:secret@127.0.0.1:5673/" {
		t.Fatalf("record %+v ready %v", rec, cmds.ready)
	}
}

// Without a Commands port a command step fails, never panics.
func TestCommandStepWithoutPort(t *testing.T) {
	in, _ := testInjector(t, time.Millisecond)
	_, err := in.inject(context.Background(), &scenario.Fault{Action: scenario.Command, Inject: []string{"true"}, Timeout: scenario.Duration(time.Second)}, "after 1s")
	if err == nil || !strings.Contains(err.Error(), errNoPort.Error()) {
		t.Fatalf("err %v", err)
	}
}
