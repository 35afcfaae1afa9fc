package cmd

import (
	"context"
	"fmt"
	"github.com/rmqtorture/rmqtorture/redact"
	"os"
	"reflect"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rmqtorture/rmqtorture/broker"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// run --uri: a broker rmqtorture did not start, reached over AMQP only.
// rmqtorture publishes to it, drains it and judges the ledger; it contacts
// no Docker Engine and injects no fault but the scenario's command steps
// (which act on whatever they name), so any other fault comes from
// outside the tool (an operator, a chaos tool, a rolling upgrade), and
// every report of a run without command steps says that none was
// injected. The URI carries credentials: only
// the client library sees it whole; what is printed or stored is
// redacted (broker.External).

// uriEnv is read as --uri when the flag is not given: a URI with a
// password on the command line is visible to every user of the host (ps).
const uriEnv = "RMQTORTURE_URI"

// dockerFlags are the flags that shape a broker container, which --uri
// replaces.
var dockerFlags = []string{"container", "containers", "nodes", "image", "images", "port", "broker-address", "keep"}

// checkURI checks --uri on its own and beside the flags it excludes. Its
// errors never quote the URI: it may hold a password.
func (o *runOpts) checkURI(c *cobra.Command) error {
	fl := c.Flags()
	src := "--uri" // what the errors below name
	if !fl.Changed("uri") {
		env := os.Getenv(uriEnv)
		if env == "" {
			return nil
		}
		// From the environment, so the password stays out of the process
		// list (ps shows the command line, not the environment).
		if err := fl.Set("uri", env); err != nil {
			return fmt.Errorf("%s: %w", uriEnv, err)
		}
		src = uriEnv
	}
	redact.SecretOf(o.uri)
	for _, name := range dockerFlags {
		if fl.Changed(name) {
			return fmt.Errorf("%s and --%s: %s names a running broker that rmqtorture reaches over AMQP only, and --%s is for a broker container: give one", src, name, src, name)
		}
	}
	for _, name := range []string{"kill-at", "down"} {
		if fl.Changed(name) {
			return fmt.Errorf("--%s: with %s rmqtorture injects no fault (it did not start the broker): leave --%s out", name, src, name)
		}
	}
	if o.uri == "" {
		return fmt.Errorf("%s needs a broker's AMQP URI (amqp:// or amqps://, with user, password, host, port and vhost)", src)
	}
	if _, err := broker.NewExternal(o.uri); err != nil {
		return fmt.Errorf("%s: %w", src, err)
	}
	return nil
}

// uriScenario refuses the scenario settings only a broker container
// rmqtorture creates can have, and takes the fault steps out of s (with
// the expectations that describe their outcome). It returns the warnings
// that say so, for stderr and the report.
func (o *runOpts) uriScenario(s *scenario.Scenario) ([]string, error) {
	switch {
	case s.Broker.HasConfig():
		return nil, fmt.Errorf("--uri: scenario %q sets broker.config or broker.advanced_config, which rmqtorture writes into a broker container it creates, before its first start; the broker --uri names keeps its own configuration (configure it yourself, or run without --uri)", s.Name)
	case s.Broker.Nodes > 1:
		return nil, fmt.Errorf("--uri: scenario %q runs a cluster of %d nodes (broker.nodes), which rmqtorture forms from containers it creates and watches through rabbitmqctl; --uri names one broker (run without --uri)", s.Name, s.Broker.Nodes)
	case s.Queue.Type == scenario.Stream:
		return nil, fmt.Errorf("--uri: scenario %q publishes to a stream over the stream protocol (queue.type: stream); with --uri rmqtorture speaks AMQP 0.9.1 only (run without --uri)", s.Name)
	}
	if s.RunsCommands() {
		// Command steps act on what they name: any broker can be their
		// target. The built-in steps act on a container rmqtorture
		// started or was named.
		for j, f := range s.Faults {
			if spec, _ := f.Action.Spec(); !spec.UserCommand {
				return nil, fmt.Errorf("--uri: scenario %q: faults[%d] is a %s step, which acts on a broker container rmqtorture started or was named; with --uri only command steps run (make it a command step, or run without --uri)", s.Name, j, f.Action)
			}
		}
		return nil, nil
	}
	msg := "no fault injected: rmqtorture did not start this broker, so it only published, drained and judged"
	switch {
	case o.split.loadOnly:
		msg = "no fault injected: a load part only publishes its share (faults are the coordinator's)"
	case o.split.drainOnly:
		msg = "no fault injected: the drain of a split run only drains (faults are the coordinator's)"
	}
	if len(s.Faults) == 0 {
		return []string{msg}, nil
	}
	warnings := []string{fmt.Sprintf("%s; scenario %q's fault steps were not run (%s)", msg, s.Name, s.FaultSummary())}
	s.Faults = nil
	kept := scenario.Expect{AllowDeadLetterPathLoss: s.Expect.AllowDeadLetterPathLoss}
	if !reflect.DeepEqual(s.Expect, kept) {
		warnings = append(warnings, fmt.Sprintf("the expectations of scenario %q are not checked: they describe the outcome of its fault steps, which --uri does not run; a lost confirmed message still fails the run", s.Name))
		s.Expect = kept
	}
	return warnings, nil
}

// external is the broker --uri names, as the run sees it: no container,
// no fault ports, no log to scan, nothing to remove.
func (o *runOpts) external() (*underTest, error) {
	ext, err := broker.NewExternal(o.uri)
	if err != nil {
		return nil, fmt.Errorf("--uri: %w", err)
	}
	return &underTest{url: ext.URL, addr: ext.Addr, shown: ext.Redacted, version: ext.ServerVersion, logs: noBrokerLog{},
		ready:  func(ctx context.Context, timeout time.Duration) error { return ext.WaitReady(ctx, timeout) },
		remove: func(context.Context) error { return nil },
	}, nil
}

// markExternal records in res that the broker was named with --uri: its
// URI, password redacted, and that no fault was injected unless the
// scenario's command steps ran (commands). The command
// line quotes the URI as typed: it is redacted here, before anything is
// written, as the password may hold characters (a quote) that
// redact.Text does not read as part of a URL.
func markExternal(ut *underTest, res *scenario.Result, commands bool) {
	if ut.shown == "" {
		return
	}
	res.URI = ut.shown
	if !commands {
		injected := false
		res.FaultsInjected = &injected
	}
	res.Command = strings.ReplaceAll(res.Command, ut.url(), ut.shown)
}

// brokerNamed is how the "broker" phase line names a broker rmqtorture
// does not start: the --uri broker (password redacted: "--uri
// amqp://bob:xxxxx@host:5672/vh"), else the containers named, else "".
func (o *runOpts) brokerNamed() string {
	if o.uri != "" {
		if ext, err := broker.NewExternal(o.uri); err == nil {
			return "--uri " + ext.Redacted
		}
	}
	return o.namedContainers()
}

// noBrokerLog is the log of a broker rmqtorture cannot read (it has no
// container): nothing is found.
type noBrokerLog struct{}

func (noBrokerLog) ScanLog(context.Context, time.Time) ([]scenario.BrokerLogFinding, error) {
	return nil, nil
}
