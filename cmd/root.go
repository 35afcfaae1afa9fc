// Package cmd is rmqtorture's command line (cobra): option structs and RunE
// functions only. Exit codes are decided in one place, ExitCode; only main
// calls os.Exit.
package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rmqtorture/rmqtorture/redact"
)

// Exit codes, documented in docs/commands.md (generated from exitCauses, which
// maps every cause to one of these).
const (
	ExitPass         = 0   // every verdict passed
	ExitFail         = 1   // a verdict failed: a confirmed message lost, unexpected delivery, or an expectation broken
	ExitUsage        = 2   // bad input: flags, scenario file, unknown scenario; nothing was started
	ExitInconclusive = 3   // the run could not measure what it set out to (broker never ready or not back, drain deadline)
	ExitError        = 4   // an operational error: Docker unreachable, image missing, a write failed
	ExitInterrupted  = 130 // Ctrl-C or SIGTERM: broker restored, partial report written
)

// exitError carries a cause and its exit code through cobra.
type exitError struct {
	code  int
	cause Cause
	err   error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usageErr is bad input of no more specific cause; opErr an operational
// error of no more specific cause.
func usageErr(err error) error { return causeErr(CauseBadArgs, err) }
func opErr(err error) error    { return causeErr(CauseOperational, err) }

// causeOf is the cause an error returned by a command carries: cobra's own
// errors (unknown flag or command) are bad arguments.
func causeOf(err error) Cause {
	if err == nil {
		return CausePass
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.cause
	}
	return CauseBadArgs
}

// ExitCode maps an error returned by a command to the process exit code.
func ExitCode(err error) int {
	if err == nil {
		return ExitPass
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return codeOf(CauseBadArgs) // cobra's own errors: unknown flag or command
}

// noArgs refuses positional arguments and names the command: cobra's
// NoArgs calls them an unknown subcommand, which they are not.
func noArgs(c *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageErr(fmt.Errorf("%s takes no arguments, got %q", c.Name(), strings.Join(args, " ")))
	}
	return nil
}

type globalOpts struct {
	file    string // -f, on the commands that read scenarios; see load
	fileSet bool   // -f was given; without it, the built-in scenarios
	verbose bool
	quiet   bool
	// logFormat is --log-format: logHuman, logText or logJSON.
	logFormat string
}

// The values of --log-format.
const (
	// logHuman: run prints one line per step (broker ready, burst, fault,
	// recovery, drain, verdict) and warnings; on a terminal also the
	// progress line. Other commands log as logText.
	logHuman = "human"
	// logText: slog's key=value lines (log/slog TextHandler), INFO and up
	// (DEBUG with -v).
	logText = "text"
	// logJSON: slog's JSON lines (log/slog JSONHandler), same levels.
	logJSON = "json"
)

// checkLogFormat refuses a --log-format that is none of the three.
func (g *globalOpts) checkLogFormat() error {
	switch g.logFormat {
	case logHuman, logText, logJSON:
		return nil
	}
	return usageErr(fmt.Errorf("--log-format %q: want human, text or json", g.logFormat))
}

// structured reports whether stderr carries slog's lines rather than run's
// step lines: --log-format text or json, or -v.
func (g *globalOpts) structured() bool { return g.logFormat != logHuman || g.verbose }

func (g *globalOpts) logger(w io.Writer) *slog.Logger {
	level := slog.LevelInfo
	if g.verbose {
		level = slog.LevelDebug
	}
	if g.quiet {
		level = slog.LevelWarn
	}
	opts := &slog.HandlerOptions{Level: level, ReplaceAttr: redactAttr}
	if g.logFormat == logJSON {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// redactAttr takes URL passwords and terminal codes out of every string and
// error a log line carries, its message included.
func redactAttr(_ []string, a slog.Attr) slog.Attr {
	switch v := a.Value; v.Kind() {
	case slog.KindString:
		a.Value = slog.StringValue(redact.Foreign(v.String()))
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			a.Value = slog.StringValue(redact.Foreign(err.Error()))
		}
	}
	return a
}

// NewRoot builds the command tree. stdout carries results only; logs go to stderr.
func NewRoot(stdout, stderr io.Writer) *cobra.Command {
	g := &globalOpts{}
	root := &cobra.Command{
		Use:   "rmqtorture",
		Short: "Kill a RabbitMQ broker mid-burst and account for every message",
		Long: `rmqtorture runs scripted scenarios against a real RabbitMQ broker in a Docker
container: it publishes bursts of orders in one of four modes (fire-and-forget,
confirm-each, confirm-window, transactional), kills the broker through the Docker Engine API at
a planned moment, restarts it, drains the queue and reconciles every message id:
confirmed, lost, nacked, returned, in doubt, duplicated, unexpected.

Exit codes: 0 pass, 1 failed verdict, 2 bad input, 3 inconclusive, 4 error,
130 interrupted.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.PersistentFlags().BoolVarP(&g.verbose, "verbose", "v", false, "debug logging on stderr")
	root.PersistentFlags().BoolVarP(&g.quiet, "quiet", "q", false, "warnings and errors only on stderr")
	root.PersistentFlags().StringVar(&g.logFormat, "log-format", logHuman, "stderr: human (run's step lines and warnings), text or json (structured log lines)")
	root.Version = versionText(debug.ReadBuildInfo()) // --version
	root.SetVersionTemplate("{{.Version}}")
	root.SetFlagErrorFunc(suggestFlag)
	// Every flag also from its RMQTORTURE_* variable (envflags.go).
	root.PersistentPreRunE = func(c *cobra.Command, _ []string) error {
		if err := flagsFromEnv(c); err != nil {
			return err
		}
		return g.checkLogFormat()
	}
	root.AddCommand(newRun(g), newExplore(g), newList(g), newValidate(g), newVersion(), newCleanup(g), newReport(g), newCompare(), newCheck())
	addCompletions(root, g)
	useGroupedHelp(root)
	return root
}

// Execute runs the command line with args under ctx (cancelled on the first
// Ctrl-C) and returns the exit code.
func Execute(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	// A password in these is masked wherever an error quotes it, in any
	// form (redact.Secret); --uri's is registered when the flag is read.
	for _, env := range []string{"DOCKER_HOST", uriEnv} {
		redact.SecretOf(os.Getenv(env))
	}
	root := NewRoot(stdout, stderr)
	root.SetArgs(args)
	c, err := root.ExecuteContextC(ctx)
	if err != nil {
		// An error may quote DOCKER_HOST, credentials included, or a broker log.
		fmt.Fprintln(stderr, "rmqtorture:", redact.Foreign(err.Error()))
		if c != nil && ExitCode(err) == ExitUsage {
			for _, line := range envNotes(c) {
				fmt.Fprintln(stderr, redact.Foreign(line))
			}
		}
	}
	return ExitCode(err)
}
