package cmd

import (
	"fmt"
	"slices"
	"strings"
)

// Cause is why a command ends the way it does. Every error a command
// returns carries one (see causeErr); its exit code and the docs'
// wording come from exitCauses, the one table of causes and codes.
type Cause string

// The causes, in the order the docs list them.
const (
	CausePass              Cause = "pass"
	CauseVerdictFail       Cause = "verdict failed"
	CauseRegression        Cause = "regression"
	CauseCheckMismatch     Cause = "check mismatch"
	CauseBadArgs           Cause = "bad arguments"
	CauseBadScenarioFile   Cause = "bad scenario file"
	CauseUnknownScenario   Cause = "unknown scenario"
	CauseBadResult         Cause = "bad result file"
	CauseUnwritableOutput  Cause = "unwritable output"
	CausePortInUse         Cause = "port in use"
	CauseNoSuchContainer   Cause = "no such container"
	CauseContainerStopped  Cause = "container not running"
	CauseNoAMQPPort        Cause = "container without AMQP port"
	CauseInconclusive      Cause = "inconclusive"
	CauseBrokerNotReady    Cause = "broker never ready"
	CauseDockerUnreachable Cause = "Docker unreachable"
	CauseImageMissing      Cause = "image missing"
	CauseWriteFailed       Cause = "write failed"
	CauseOperational       Cause = "operational error"
	CauseInterrupted       Cause = "interrupted"
)

// exitCause is one row of the exit code table: a cause, its exit code, the
// commands that can end with it, and the docs' words for it.
type exitCause struct {
	cause    Cause
	code     int
	commands []string // nil: every command
	readme   string
}

// exitCauses is the table of causes → exit codes, in the docs' order (by
// code, then as listed). The exit code tables of docs/commands.md and
// docs/ci.md (moved there from README.md) are generated from it
// (TestReadmeExitCodes checks them; -update rewrites them).
var exitCauses = []exitCause{
	{CausePass, ExitPass, nil, "success: every verdict passed (`run`), no regression (`compare`), every mode matches its history (`check`), or the command did what it was asked"},
	{CauseVerdictFail, ExitFail, []string{"run", "check", "explore"}, "a verdict failed: a confirmed message lost, an unexpected delivery, or an `expect` limit exceeded (also when the run was interrupted: a confirmed message lost is a finding); `check`: the merged verdict of a split run; `explore`: a trial failed"},
	{CauseRegression, ExitFail, []string{"compare"}, "a regression against the baseline (each one named on stdout)"},
	{CauseCheckMismatch, ExitFail, []string{"check"}, "a re-judged count, id range or verdict differs from `result.json`, the history contradicts itself, or `result.json` lists no mode to check"},
	{CauseBadArgs, ExitUsage, nil, "bad input: an unknown command or flag, a bad flag value, the wrong number of arguments"},
	{CauseBadScenarioFile, ExitUsage, []string{"run", "explore", "list", "validate"}, "bad input: the scenario file is unreadable or invalid (each problem with file:line:column)"},
	{CauseUnknownScenario, ExitUsage, []string{"run", "explore", "validate"}, "bad input: no scenario of that name in the file"},
	{CauseBadResult, ExitUsage, []string{"report", "compare", "check"}, "bad input: a `result.json` or history unreadable, malformed or of a `schema_version` this binary does not read (the message names the file), a run folder without history, or two results of different scenarios; `check`: folders of different split runs, or one part given twice"},
	{CauseUnwritableOutput, ExitUsage, []string{"run", "report", "compare"}, "bad input: `--out` or `--summary-file` cannot be created or written (checked before anything starts; the message names the flag)"},
	{CausePortInUse, ExitUsage, []string{"run"}, "bad input: `--port` is already in use on 127.0.0.1 (or `--broker-address`; checked before a container is created)"},
	{CauseNoSuchContainer, ExitUsage, []string{"run"}, "bad input: `--container` or one of `--containers` names no container"},
	{CauseContainerStopped, ExitUsage, []string{"run"}, "bad input: the `--container` container, or one of `--containers`, is not running"},
	{CauseNoAMQPPort, ExitUsage, []string{"run"}, "bad input: the `--container` container, or one of `--containers`, publishes no AMQP port (5672/tcp) on the host"},
	{CauseInconclusive, ExitInconclusive, []string{"run", "check"}, "inconclusive: broker not back within its deadline, drain deadline, a fault that never fired or landed after the burst had ended; `check`: a split run's load part or drain missing"},
	{CauseBrokerNotReady, ExitInconclusive, []string{"run"}, "inconclusive: the broker never accepted an AMQP login within `broker.ready_timeout` (`result.json` says so)"},
	{CauseDockerUnreachable, ExitError, []string{"run", "explore"}, "operational error: the Docker Engine cannot be reached"},
	{CauseImageMissing, ExitError, []string{"run"}, "operational error: the broker image is not in the local Docker Engine"},
	{CauseWriteFailed, ExitError, []string{"run", "report", "compare"}, "operational error: stdout, a report or `--summary-file` could not be written after all (e.g. the disk filled up)"},
	{CauseOperational, ExitError, nil, "operational error: any other failure: a Docker call (`run`: creating or starting the container; `cleanup`: reaching the Docker Engine, removing a container), or an rmqtorture bug (named as such)"},
	{CauseInterrupted, ExitInterrupted, []string{"run", "explore"}, "interrupted (Ctrl-C or SIGTERM): the fault under way finished, the broker restored, what was published drained, the partial report written with `interrupted: true`, the container removed; a second Ctrl-C writes what was measured, removes the container and exits; a third exits at once"},
}

// codeOf is the exit code of cause c; an unknown cause is an rmqtorture
// bug, reported as an operational error.
func codeOf(c Cause) int {
	i := slices.IndexFunc(exitCauses, func(e exitCause) bool { return e.cause == c })
	if i < 0 {
		return ExitError
	}
	return exitCauses[i].code
}

// causeErr wraps err with its cause (and so its exit code).
func causeErr(c Cause, err error) error { return &exitError{code: codeOf(c), cause: c, err: err} }

// exitCodesMarkdown renders an exit code table of the docs: every cause
// that command can end with (every cause when command is ""), one row each.
func exitCodesMarkdown(command string) string {
	var b strings.Builder
	b.WriteString("| code | cause |")
	if command == "" {
		b.WriteString(" commands |")
	}
	b.WriteString("\n|---:|---|")
	if command == "" {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, e := range exitCauses {
		if command != "" && e.commands != nil && !slices.Contains(e.commands, command) {
			continue
		}
		fmt.Fprintf(&b, "| %d | %s |", e.code, e.readme)
		if command == "" {
			cmds := "all"
			if e.commands != nil {
				cmds = "`" + strings.Join(e.commands, "`, `") + "`"
			}
			fmt.Fprintf(&b, " %s |", cmds)
		}
		b.WriteString("\n")
	}
	return b.String()
}
