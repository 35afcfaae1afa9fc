package cmd

import (
	"fmt"
	"io"
	"strings"

	"github.com/rmqtorture/rmqtorture/broker"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// Command steps (action: command) run programs the scenario names, with
// rmqtorture's rights: a run refuses them unless --allow-commands says the
// user means it, and says on stderr which commands will run before the
// first starts. The commands see the run's facts in their environment
// (commandEnv), so one can name the run's own container.

// allowCommandsFlag is the flag that lets a run play command steps.
const allowCommandsFlag = "allow-commands"

// checkCommands refuses a scenario with a command step when
// --allow-commands was not given, naming the step's file:line and field;
// with the flag, it writes on w each command the scenario will run
// (passwords redacted).
func (o *runOpts) checkCommands(w io.Writer, file string, s *scenario.Scenario) error {
	for j, f := range s.Faults {
		if spec, _ := f.Action.Spec(); !spec.UserCommand {
			continue
		}
		if !o.allowCommands {
			at := file
			if f.Line > 0 {
				at = fmt.Sprintf("%s:%d", file, f.Line)
			}
			return fmt.Errorf("%s: scenario %q: faults[%d].action: command runs the programs the scenario names (%s) with your rights; run them only with --%s",
				at, s.Name, j, scenario.CommandLine(f.Inject), allowCommandsFlag)
		}
		line := fmt.Sprintf("rmqtorture will run, for scenario %q faults[%d]: inject `%s`", s.Name, j, scenario.CommandLine(f.Inject))
		if len(f.Recover) > 0 {
			line += fmt.Sprintf(", then after %s recover `%s`", f.Down.D(), scenario.CommandLine(f.Recover))
		}
		fmt.Fprintln(w, line+fmt.Sprintf(" (each within %s)", f.Timeout.D()))
	}
	return nil
}

// commandEnv are the run's facts a command step's commands see, beside
// rmqtorture's own environment: RMQT_RUN_ID (the run's id, in its
// container and queue names), RMQT_SCENARIO, and for a broker rmqtorture
// started or was named, RMQT_CONTAINER (a single broker's container) or
// RMQT_CONTAINERS (a cluster's node containers, node 1 first,
// comma-separated; a single broker's container too), and for a single
// broker RMQT_AMQP_ADDR (address:port of its AMQP, the address --broker-address,
// 127.0.0.1 by default; no credentials). With --uri there
// is no container: only the first two.
func commandEnv(runID string, s *scenario.Scenario, ut *underTest) []string {
	env := []string{"RMQT_RUN_ID=" + runID, "RMQT_SCENARIO=" + s.Name}
	if ut.shown != "" { // --uri
		return env
	}
	if len(ut.nodes) > 0 {
		return append(env, "RMQT_CONTAINERS="+strings.Join(ut.nodes, ","))
	}
	return append(env, "RMQT_CONTAINER="+ut.name, "RMQT_CONTAINERS="+ut.name, "RMQT_AMQP_ADDR="+ut.addr)
}

// commands is the Commands port of a run on ut.
func commands(runID string, s *scenario.Scenario, ut *underTest) *broker.Commands {
	return &broker.Commands{Env: commandEnv(runID, s, ut), Ready: ut.ready}
}
