package docker

import (
	"regexp"
	"strings"
)

// logPrefix is the start of a RabbitMQ console log line: its time, level
// and Erlang process ("2026-12-04 17:39:06.536780+00:00 [error] <0.153.0> ").
var logPrefix = regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+[+-]\d\d:\d\d \[\w+\] <[\d.]+> ?`)

// configRefusal reads a broker's log for RabbitMQ refusing its
// configuration at boot (cuttlefish's "Error preparing configuration in
// phase …:" and the "  - " items under it) and returns what it refused, one
// item per setting, named as the scenario names it (broker.config.KEY):
// "broker.config.nosuch.setting: no such setting; broker.config.consumer_timeout:
// \"banana\" cannot be converted to a(n) integer". It returns "" when the
// log holds no such refusal. Source: the log lines of rabbitmq-server's
// prelaunch (rabbit_prelaunch_conf) on 3.10, 4.0 and 4.3.
func configRefusal(log string) string {
	var items []string
	in := false
	for _, line := range strings.Split(log, "\n") {
		line = logPrefix.ReplaceAllString(strings.TrimRight(line, "\r"), "")
		switch {
		case strings.HasPrefix(line, "Error preparing configuration in phase"):
			in = true
		case in && strings.HasPrefix(strings.TrimSpace(line), "- "):
			items = append(items, strings.TrimPrefix(strings.TrimSpace(line), "- "))
		case in && strings.TrimSpace(line) != "":
			in = false
		}
	}
	const unknown, badType = "Conf file attempted to set unknown variable: ", "Error transforming datatype for: "
	var out []string
	for i := 0; i < len(items); i++ {
		if key, ok := strings.CutPrefix(items[i], unknown); ok {
			out = append(out, "broker.config."+key+": no such setting")
		} else if key, ok := strings.CutPrefix(items[i], badType); ok {
			why := "a value of the wrong type"
			// The item after it says why, unless it is the next setting's.
			if next := i + 1; next < len(items) && !strings.HasPrefix(items[next], unknown) && !strings.HasPrefix(items[next], badType) {
				why, i = items[next], next
			}
			out = append(out, "broker.config."+key+": "+why)
		} else {
			out = append(out, items[i])
		}
	}
	return strings.Join(out, "; ")
}
