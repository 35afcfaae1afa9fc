package scenario

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Command runs the user's own command to inject the fault (Inject: a
// program and its arguments, no shell) and, after Down, another to
// recover (Recover), then waits until the broker accepts AMQP logins
// (Ready, default the run's broker). It runs arbitrary programs: a run
// refuses it without --allow-commands. Its effect is timed from the
// command's start (a `docker kill` lands while it runs); the series
// marks no broker state for it unless the step says which (State), as
// rmqtorture cannot know what the command did: the timeline shows the
// step, its recovery and the first AMQP login after it.
const Command Action = "command"

// DefaultCommandTimeout bounds each command of a command step that sets no
// timeout.
const DefaultCommandTimeout = 60 * time.Second

// commandSpec: inject and recover (a program and its arguments), timeout
// (a duration bounding each command, at least 1s, default
// DefaultCommandTimeout), ready (AMQP URIs), state (a broker state) and
// down (a duration, default 5s) between inject and recover.
var commandSpec = ActionSpec{
	Name:     Command,
	Params:   []Param{ParamInject, ParamRecover, ParamTimeout, ParamReady, ParamState, ParamDown},
	Recovers: true, Leaves: "as its command left it", FromTrigger: true, Repeatable: true,
	BrokerDown: true, UserCommand: true, DowntimeFromConnections: true,
	While: "while the scenario's command step was in effect",
	defaults: func(d defaulter, fp string, f *Fault) {
		d.dur(fp+"timeout", &f.Timeout, DefaultCommandTimeout)
	},
	validate: validateCommand,
}

// validateCommand checks a command step's commands, timeout and ready
// URIs. A ready URI is never quoted: it may hold a password.
func validateCommand(p *parser, fp string, f Fault) {
	if !p.has(fp + ".inject") {
		p.fail(fp+".inject", "missing; a command step names the command that injects its fault, e.g. [docker, kill, --signal, KILL, my-broker]")
	}
	for _, k := range []string{"target", "node"} {
		if p.has(fp + "." + k) {
			p.fail(fp+"."+k, "a command step acts on what its commands name, not on a node rmqtorture picks: leave %s out", k)
		}
	}
	for _, c := range []struct {
		key  Param
		argv []string
	}{{ParamInject, f.Inject}, {ParamRecover, f.Recover}} {
		path := fp + "." + string(c.key)
		switch {
		case !p.has(path):
		case len(c.argv) == 0:
			p.fail(path, "empty; give a program and its arguments, e.g. [docker, start, my-broker] (no shell: write [sh, -c, \"…\"] for one)")
		case strings.TrimSpace(c.argv[0]) == "":
			p.fail(path+"[0]", "empty; the first item is the program to run")
		}
	}
	if p.has(fp+".timeout") && f.Timeout < Duration(time.Second) {
		p.fail(fp+".timeout", "must be at least 1s, got %s", f.Timeout.D())
	}
	for i, raw := range f.Ready {
		if problem := amqpURIProblem(raw); problem != "" {
			p.fail(fmt.Sprintf("%s.ready[%d]", fp, i), "not an AMQP URI: %s", problem)
		}
	}
}

// amqpURIProblem says what keeps raw from being an AMQP URI
// (amqp://user:password@host:port/vhost, or amqps://), "" when nothing
// does, in words that quote no part of it but the scheme and port.
func amqpURIProblem(raw string) string {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		// url.Parse quotes the whole URL in its error.
		return "it does not parse as a URL (a password with a reserved character such as @, :, /, ? or # must be percent-encoded)"
	case u.Scheme != "amqp" && u.Scheme != "amqps":
		return fmt.Sprintf("the scheme is %q; use amqp:// (or amqps:// for TLS)", u.Scheme)
	case u.Hostname() == "":
		return "it names no host"
	}
	if port := u.Port(); port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return fmt.Sprintf("port %q is not within 1–65535", port)
		}
	}
	return ""
}
