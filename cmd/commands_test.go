package cmd

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// --allow-commands with no command step is fine and prints nothing; with
// one, stderr says what will run (passwords redacted), each command
// within its timeout.
func TestCheckCommands(t *testing.T) {
	o := &runOpts{allowCommands: true}
	var w bytes.Buffer
	plain := &scenario.Scenario{Name: "p", Faults: []scenario.Fault{{Action: scenario.Kill}}}
	if err := o.checkCommands(&w, "s.yaml", plain); err != nil || w.Len() != 0 {
		t.Fatalf("no command step: %v, printed %q", err, w.String())
	}
	s := &scenario.Scenario{Name: "c", Faults: []scenario.Fault{{Action: scenario.Command, Line: 7,
		Inject:  []string{"sh", "-c", "docker kill $RMQT_CONTAINER"},
		Recover: []string{"curl", "http://ops:s3cret@host/start"}, Down: scenario.Duration(2 * time.Second), Timeout: scenario.Duration(time.Minute)}}}
	if err := o.checkCommands(&w, "s.yaml", s); err != nil {
		t.Fatal(err)
	}
	want := "rmqtorture will run, for scenario \"c\" faults[0]: inject `sh -c 'docker kill $RMQT_CONTAINER'`, then after 2s recover `curl http://ops:xxxxx@host/start` (each within 1m0s)\n"
	if w.String() != want {
		t.Fatalf("printed %q\nwant    %q", w.String(), want)
	}
}

// The commands see the run's id and scenario, and the container(s) of a
// broker rmqtorture started; with --uri only the first two.
func TestCommandEnv(t *testing.T) {
	s := &scenario.Scenario{Name: "s"}
	single := &underTest{name: "rmqt-ab12", addr: "127.0.0.1:40001"}
	if got, want := commandEnv("ab12", s, single), []string{"RMQT_RUN_ID=ab12", "RMQT_SCENARIO=s", "RMQT_CONTAINER=rmqt-ab12", "RMQT_CONTAINERS=rmqt-ab12", "RMQT_AMQP_ADDR=127.0.0.1:40001"}; !slices.Equal(got, want) {
		t.Fatalf("single: %q", got)
	}
	cluster := &underTest{name: "rmqt-ab12 (3 nodes)", nodes: []string{"rmqt-ab12-rmq1", "rmqt-ab12-rmq2", "rmqt-ab12-rmq3"}}
	if got, want := commandEnv("ab12", s, cluster), []string{"RMQT_RUN_ID=ab12", "RMQT_SCENARIO=s", "RMQT_CONTAINERS=rmqt-ab12-rmq1,rmqt-ab12-rmq2,rmqt-ab12-rmq3"}; !slices.Equal(got, want) {
		t.Fatalf("cluster: %q", got)
	}
	uri := &underTest{shown: "amqp://bob:xxxxx@h:5672/"}
	if got, want := commandEnv("ab12", s, uri), []string{"RMQT_RUN_ID=ab12", "RMQT_SCENARIO=s"}; !slices.Equal(got, want) {
		t.Fatalf("--uri: %q", got)
	}
}

// With --uri, a scenario of command steps keeps them and its
// expectations (the commands make the named broker a target), and its
// result does not say "no fault injected".
func TestURIKeepsCommandSteps(t *testing.T) {
	o := &runOpts{uri: "amqp://bob:pw@127.0.0.1:5672/"}
	limit := 0
	s := &scenario.Scenario{Name: "c", Faults: []scenario.Fault{{Action: scenario.Command, Inject: []string{"true"}}},
		Expect: scenario.Expect{MaxInDoubt: &limit}}
	w, err := o.uriScenario(s)
	if err != nil || w != nil || len(s.Faults) != 1 || s.Expect.MaxInDoubt == nil {
		t.Fatalf("warnings %q, err %v, faults %d, expect %+v", w, err, len(s.Faults), s.Expect)
	}
	ut, err := o.external()
	if err != nil {
		t.Fatal(err)
	}
	res := &scenario.Result{}
	markExternal(ut, res, true)
	if res.FaultsInjected != nil || res.URI != "amqp://bob:xxxxx@127.0.0.1:5672/" {
		t.Fatalf("faults_injected %v, uri %q", res.FaultsInjected, res.URI)
	}
}
