package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// The bad-input suite: every input below is one a user can get wrong, fed
// through the real command line (Execute) in a folder of its own. Each must
// exit with its exact code and its exact first line of stderr, print nothing
// on stdout, contact no Docker Engine (DOCKER_HOST points at a listener
// that counts connections: a command that got as far as Docker would be
// seen, and would fail differently) and write nothing (the folder holds
// exactly the files the case put there, so --out and --summary-file were
// not created). The "Reliability" section of docs/reliability.md quotes
// the count.

var printBadInputs = flag.Bool("print-bad-inputs", false, "print each bad input's exit code and first stderr line in table order (to write the table)")

// badInput is one refused input: args run in a fresh folder holding files
// (name → content; names may have folders). "{busyport}" in args and
// first is a port the test holds open on 127.0.0.1.
type badInput struct {
	name  string
	env   map[string]string // set for the case
	args  []string
	files map[string]string
	code  int
	first string // the exact first line of stderr
	// validate: a scenario file; `validate -f` must refuse it with the
	// same first line.
	validate bool
}

// scenarioHead is the start of every scenario case's file; the body
// starts on line 4, indented under "- name: s".
const scenarioHead = "version: 1\nscenarios:\n  - name: s\n"

// scen is a scenario file case: the scenario s with body (lines joined by
// \n, each indented 4 spaces in the file), run as `run s -f s.yaml --out out`.
func scen(name, body string, code int, first string) badInput {
	lines := strings.Split(body, "\n")
	for i, l := range lines {
		lines[i] = "    " + l
	}
	return fileCase(name, scenarioHead+strings.Join(lines, "\n")+"\n", code, first)
}

// fileCase is a whole scenario file, run as `run s -f s.yaml --out out`.
func fileCase(name, yaml string, code int, first string) badInput {
	return badInput{name: "scenario/" + name, args: []string{"run", "s", "-f", "s.yaml", "--out", "out"},
		files: map[string]string{"s.yaml": yaml}, code: code, first: first, validate: true}
}

// okScenario is a valid scenario file with the one scenario s, for flag cases.
const okScenario = scenarioHead + "    load: {messages: 100}\n"

// flagCase runs args beside okScenario (s.yaml) and, when given, more files.
func flagCase(name string, args []string, code int, first string, files ...string) badInput {
	m := map[string]string{"s.yaml": okScenario}
	for i := 0; i+1 < len(files); i += 2 {
		m[files[i]] = files[i+1]
	}
	return badInput{name: "flags/" + name, args: args, files: m, code: code, first: first}
}

// withEnv is tc run with the environment variable k set to v.
func withEnv(tc badInput, k, v string) badInput {
	tc.env = map[string]string{k: v}
	return tc
}

// run is `run s -f s.yaml --out out` followed by extra.
func run(extra ...string) []string {
	return append([]string{"run", "s", "-f", "s.yaml", "--out", "out"}, extra...)
}

// resultCase runs args beside the files (name, content pairs).
func resultCase(name string, args []string, code int, first string, files ...string) badInput {
	m := map[string]string{}
	for i := 0; i+1 < len(files); i += 2 {
		m[files[i]] = files[i+1]
	}
	return badInput{name: "results/" + name, args: args, files: m, code: code, first: first}
}

// resultEdit returns the stored result.json with edit applied to it as a
// JSON object.
func resultEdit(t *testing.T, stored string, edit func(r map[string]any)) string {
	t.Helper()
	var r map[string]any
	if err := json.Unmarshal([]byte(stored), &r); err != nil {
		t.Fatal(err)
	}
	edit(r)
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// splitPart is result res marked as load part k of 2 of split run runID
// (k 0: the drain).
func splitPart(t *testing.T, res, runID string, k int) string {
	return resultEdit(t, res, func(m map[string]any) {
		m["schema_version"] = scenario.SchemaVersion
		delete(m, "migrated_from")
		delete(m, "not_recorded")
		lp := map[string]any{"run_id": runID, "parts": 2}
		if k == 0 {
			lp["drain"] = true
		} else {
			first, end := metrics.PartRange(int(m["messages"].(float64)), k, 2)
			lp["part"], lp["first_seq"], lp["end_seq"] = k, first, end
		}
		m["load_part"] = lp
	})
}

// mode0 is the first mode of a result decoded as a JSON object.
func mode0(r map[string]any) map[string]any { return r["modes"].([]any)[0].(map[string]any) }

func badInputs(t *testing.T) []badInput {
	stored := readFile(t, storedResult)
	other := resultEdit(t, stored, func(r map[string]any) { r["scenario"] = "baseline" })
	checkDir := writeCheckRun(t)
	checkRes := readFile(t, filepath.Join(checkDir, "result.json"))
	history := readFile(t, filepath.Join(checkDir, "history-0.bin.gz"))
	noHistory := resultEdit(t, checkRes, func(r map[string]any) { delete(mode0(r), "history") })
	return slices.Concat(scenarioCases(), flagCases(), resultCases(t, stored, other, checkRes, history, noHistory))
}

// scenarioCases are bad scenario files: syntax, types, unknown keys, enums,
// ranges, durations, and settings that contradict each other.
func scenarioCases() []badInput {
	return []badInput{
		// The file as a whole.
		fileCase("empty file", "", ExitUsage, "rmqtorture: s.yaml: empty file; it needs version: 1 and a list of scenarios"),
		fileCase("not YAML", "version: 1\nscenarios: [\n", ExitUsage, "rmqtorture: s.yaml:2: did not find expected node content"),
		fileCase("two documents", okScenario+"---\nversion: 1\n", ExitUsage, "rmqtorture: s.yaml:5:1: more than one YAML document; put all scenarios in one"),
		fileCase("version missing", "scenarios:\n  - name: s\n    load: {messages: 100}\n", ExitUsage, "rmqtorture: s.yaml:1:1: version: missing; write version: 1"),
		fileCase("version 2", "version: 2\nscenarios:\n  - name: s\n    load: {messages: 100}\n", ExitUsage, "rmqtorture: s.yaml:1:10: version: unsupported version 2 (this rmqtorture reads version 1)"),
		fileCase("version a string", "version: one\nscenarios:\n  - name: s\n    load: {messages: 100}\n", ExitUsage, "rmqtorture: s.yaml:1:10: version: must be a whole number, got \"one\""),
		fileCase("no scenarios", "version: 1\nscenarios: []\n", ExitUsage, "rmqtorture: s.yaml:2:12: scenarios: no scenarios"),
		fileCase("scenarios a mapping", "version: 1\nscenarios: {s: {}}\n", ExitUsage, "rmqtorture: s.yaml:2:12: scenarios: must be a list, got a mapping"),
		fileCase("unknown top-level key", okScenario+"defaults: {}\n", ExitUsage, "rmqtorture: s.yaml:5:1: defaults: unknown rmqtorture scenario file (known: version, scenarios)"),
		fileCase("name missing", "version: 1\nscenarios:\n  - load: {messages: 100}\n", ExitUsage, "rmqtorture: s.yaml:3:5: scenarios[0].name: \"\" is not a scenario name (lower-case letters, digits and dashes)"),
		fileCase("name upper-case", "version: 1\nscenarios:\n  - name: S\n    load: {messages: 100}\n", ExitUsage, "rmqtorture: s.yaml:3:11: scenarios[0].name: \"S\" is not a scenario name (lower-case letters, digits and dashes)"),
		fileCase("name with a space", "version: 1\nscenarios:\n  - name: my scenario\n    load: {messages: 100}\n", ExitUsage, "rmqtorture: s.yaml:3:11: scenarios[0].name: \"my scenario\" is not a scenario name (lower-case letters, digits and dashes)"),
		fileCase("duplicate names", okScenario+"  - name: s\n    load: {messages: 100}\n", ExitUsage, "rmqtorture: s.yaml:5:11: scenarios[1].name: \"s\" already names scenarios[0]"),
		fileCase("a tab for indentation", "version: 1\nscenarios:\n\t- name: s\n", ExitUsage, "rmqtorture: s.yaml:3: found character that cannot start any token"),
		fileCase("an alias inside its own anchor", scenarioHead+"    load: {messages: 100, modes: &m [*m]}\n", ExitUsage, "rmqtorture: s.yaml:4:38: scenarios[0].load.modes[0]: alias *m stands for the value that holds it (&m, line 4): a value cannot contain itself"),
		fileCase("garbage after the document end", okScenario+"...\ngarbage: [\n", ExitUsage, "rmqtorture: s.yaml:5: after the end of the document: did not find expected <document start>"),
		fileCase("values nested 40 deep", "version: 1\nscenarios: []\nx: "+strings.Repeat("[", 40)+strings.Repeat("]", 40)+"\n", ExitUsage, "rmqtorture: s.yaml:3:35: x[0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0]: values nested more than 32 deep (a scenario nests 4); refusing to read further"),
		fileCase("alias expansion bomb", "version: 1\na: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\nscenarios: []\n", ExitUsage, "rmqtorture: s.yaml:2:29: e[0][6][8][8][7]: aliases expand the file to more than 20000 values; refusing to read further"),
		scen("fault without an action", "load: {messages: 100}\nfaults:\n  - {published: 10}", ExitUsage, "rmqtorture: s.yaml:6:9: scenarios[0].faults[0].action: missing; every step names its action ("+actionsOn(1)+")"),
		fileCase("scenario not a mapping", "version: 1\nscenarios: [s]\n", ExitUsage, "rmqtorture: s.yaml:2:13: scenarios[0]: must be a mapping, got \"s\""),
		scen("unknown scenario key", "load: {messages: 100}\nfault: []", ExitUsage, "rmqtorture: s.yaml:5:5: scenarios[0].fault: unknown field (known: name, description, broker, queue, load, faults, consumers, drain, expect, matrix, seed, space, runs)"),
		scen("seed negative", "load: {messages: 100}\nseed: -1", ExitUsage, "rmqtorture: s.yaml:5:11: scenarios[0].seed: must be within 0–18446744073709551615, got -1"),
		scen("seed a string", "load: {messages: 100}\nseed: abc", ExitUsage, "rmqtorture: s.yaml:5:11: scenarios[0].seed: must be a whole number, got \"abc\""),
		// broker
		scen("broker.image empty", "broker: {image: ''}\nload: {messages: 100}", ExitUsage, "rmqtorture: s.yaml:4:21: scenarios[0].broker.image: must name an image"),
		scen("broker unknown key", "broker: {imgae: x}\nload: {messages: 100}", ExitUsage, "rmqtorture: s.yaml:4:14: scenarios[0].broker.imgae: unknown field (known: image, ready_timeout, config, advanced_config, nodes, images, filesystem)"),
		scen("broker.images an empty name", "broker: {images: [rabbitmq:4, '']}\nload: {messages: 100}", ExitUsage, "rmqtorture: s.yaml:4:35: scenarios[0].broker.images[1]: must name an image"),
		scen("broker.images twice the same", "broker: {images: [rabbitmq:4, rabbitmq:4]}\nload: {messages: 100}", ExitUsage, "rmqtorture: s.yaml:4:35: scenarios[0].broker.images[1]: \"rabbitmq:4\" is already broker.images[0] (\"rabbitmq:4\"): each image runs once"),
		scen("broker.images one image spelt twice", "broker: {images: [rabbitmq:4, docker.io/library/rabbitmq:4]}\nload: {messages: 100}", ExitUsage, "rmqtorture: s.yaml:4:35: scenarios[0].broker.images[1]: \"docker.io/library/rabbitmq:4\" is already broker.images[0] (\"rabbitmq:4\"): each image runs once"),
		scen("broker.images not an image reference", "broker: {images: [rabbitmq:4, 'Bad Image!']}\nload: {messages: 100}", ExitUsage, "rmqtorture: s.yaml:4:35: scenarios[0].broker.images[1]: \"Bad Image!\" is not an image reference: invalid reference format: repository name (library/Bad Image!) must be lowercase"),
		scen("broker.image not an image reference", "broker: {image: 'rabbitmq:'}\nload: {messages: 100}", ExitUsage, "rmqtorture: s.yaml:4:21: scenarios[0].broker.image: \"rabbitmq:\" is not an image reference: invalid reference format"),
		scen("broker.images empty", "broker: {images: []}\nload: {messages: 100}", ExitUsage, "rmqtorture: s.yaml:4:22: scenarios[0].broker.images: names no image: list two or more images to run the scenario on, or leave broker.images out"),
		scen("broker.images beside broker.image", "broker: {image: rabbitmq:4, images: [rabbitmq:3, rabbitmq:4]}\nload: {messages: 100}", ExitUsage, "rmqtorture: s.yaml:4:41: scenarios[0].broker.images: broker.image and broker.images both name the broker's image: give one (broker.images runs the scenario on each)"),
		scen("broker.images a string", "broker: {images: rabbitmq:4}\nload: {messages: 100}", ExitUsage, "rmqtorture: s.yaml:4:22: scenarios[0].broker.images: must be a list, got \"rabbitmq:4\""),
		// groups (runs)
		fileCase("group runs an unknown scenario", okScenario+"  - name: g\n    runs: [s, kill-mid-burst]\n", ExitUsage, "rmqtorture: s.yaml:6:15: scenarios[1].runs[1]: no scenario named \"kill-mid-burst\" in this file"),
		fileCase("group runs a misspelt scenario", okScenario+"  - name: g\n    runs: [ss]\n", ExitUsage, "rmqtorture: s.yaml:6:12: scenarios[1].runs[0]: no scenario named \"ss\" in this file; did you mean s?"),
		fileCase("group runs a group", okScenario+"  - name: g\n    runs: [s]\n  - name: h\n    runs: [g]\n", ExitUsage, "rmqtorture: s.yaml:8:12: scenarios[2].runs[0]: \"g\" is a group itself: a group runs scenarios, not groups"),
		fileCase("group runs itself", okScenario+"  - name: g\n    runs: [s, g]\n", ExitUsage, "rmqtorture: s.yaml:6:15: scenarios[1].runs[1]: \"g\" is this group itself"),
		fileCase("group runs a scenario twice", okScenario+"  - name: g\n    runs: [s, s]\n", ExitUsage, "rmqtorture: s.yaml:6:15: scenarios[1].runs[1]: \"s\" is already runs[0]: a group runs each scenario once"),
		fileCase("group with a load", okScenario+"  - name: g\n    runs: [s]\n    load: {messages: 100}\n", ExitUsage, "rmqtorture: s.yaml:7:11: scenarios[1].load: a group (runs) has no load of its own: each scenario it runs brings its own"),
		fileCase("group with an expect", okScenario+"  - name: g\n    runs: [s]\n    expect: {modes: {confirm-each: {lost: 0}}}\n", ExitUsage, "rmqtorture: s.yaml:7:13: scenarios[1].expect: a group (runs) has no expect of its own: each scenario it runs brings its own"),
		fileCase("group with broker.nodes", okScenario+"  - name: g\n    runs: [s]\n    broker: {nodes: 3}\n", ExitUsage, "rmqtorture: s.yaml:7:21: scenarios[1].broker.nodes: a group (runs) sets only broker.images: each scenario it runs brings its own broker.nodes"),
		fileCase("group with empty runs", okScenario+"  - name: g\n    runs: []\n", ExitUsage, "rmqtorture: s.yaml:6:11: scenarios[1].runs: names no scenario: list the scenarios of this file the group runs, e.g. runs: [kill-mid-burst, delivery-limit]"),
		fileCase("group with an empty image", okScenario+"  - name: g\n    runs: [s]\n    broker: {images: [rabbitmq:4, ' ']}\n", ExitUsage, "rmqtorture: s.yaml:7:35: scenarios[1].broker.images[1]: must name an image"),
		fileCase("group runs a bad name", okScenario+"  - name: g\n    runs: [S]\n", ExitUsage, "rmqtorture: s.yaml:6:12: scenarios[1].runs[0]: \"S\" is not a scenario name (lower-case letters, digits and dashes)"),
		scen("ready_timeout a number", "broker: {ready_timeout: 5}\nload: {messages: 100}", ExitUsage, "rmqtorture: s.yaml:4:29: scenarios[0].broker.ready_timeout: must be a duration (use e.g. 5s, 250ms), got \"5\""),
		scen("ready_timeout not a duration", "broker: {ready_timeout: soon}\nload: {messages: 100}", ExitUsage, "rmqtorture: s.yaml:4:29: scenarios[0].broker.ready_timeout: \"soon\" is not a duration (use e.g. 5s, 250ms)"),
		scen("ready_timeout 0s", "broker: {ready_timeout: 0s}\nload: {messages: 100}", ExitUsage, "rmqtorture: s.yaml:4:29: scenarios[0].broker.ready_timeout: must be at least 1ms, got 0s"),
		scen("ready_timeout negative", "broker: {ready_timeout: -1s}\nload: {messages: 100}", ExitUsage, "rmqtorture: s.yaml:4:29: scenarios[0].broker.ready_timeout: must be at least 1ms, got -1s"),
		scen("config reserved listeners", "broker: {config: {listeners.tcp.default: '5673'}}\nload: {messages: 100}", ExitUsage, "rmqtorture: s.yaml:4:46: scenarios[0].broker.config.listeners.tcp.default: rmqtorture's own broker setup needs listeners.tcp.default (AMQP on 5672 on every interface, guest from the host, the console log): a scenario cannot change it"),
		scen("config reserved loopback_users", "broker: {config: {loopback_users: none}}\nload: {messages: 100}", ExitUsage, "rmqtorture: s.yaml:4:39: scenarios[0].broker.config.loopback_users: rmqtorture's own broker setup needs loopback_users (AMQP on 5672 on every interface, guest from the host, the console log): a scenario cannot change it"),
		scen("config reserved default_pass", "broker: {config: {default_pass: secret}}\nload: {messages: 100}", ExitUsage, "rmqtorture: s.yaml:4:37: scenarios[0].broker.config.default_pass: rmqtorture's own broker setup needs default_pass (AMQP on 5672 on every interface, guest from the host, the console log): a scenario cannot change it"),
		scen("config reserved log.console.level", "broker: {config: {log.console.level: debug}}\nload: {messages: 100}", ExitUsage, "rmqtorture: s.yaml:4:42: scenarios[0].broker.config.log.console.level: rmqtorture's own broker setup needs log.console.level (AMQP on 5672 on every interface, guest from the host, the console log): a scenario cannot change it"),
		scen("config key not a conf key", "broker: {config: {Consumer Timeout: '5000'}}\nload: {messages: 100}", ExitUsage, "rmqtorture: s.yaml:4:41: scenarios[0].broker.config.Consumer Timeout: \"Consumer Timeout\" is not a rabbitmq.conf key (dot-separated names such as consumer_timeout or disk_free_limit.absolute)"),
		scen("config empty value", "broker: {config: {consumer_timeout: ''}}\nload: {messages: 100}", ExitUsage, "rmqtorture: s.yaml:4:41: scenarios[0].broker.config.consumer_timeout: needs a value"),
		scen("config value with a line break", "broker: {config: {consumer_timeout: \"5000\\nlisteners.tcp.default = 1\"}}\nload: {messages: 100}", ExitUsage, "rmqtorture: s.yaml:4:41: scenarios[0].broker.config.consumer_timeout: a rabbitmq.conf value is one line; \"5000\\nlisteners.tcp.default = 1\" has a line break"),
		scen("advanced_config reserved tcp_listeners", "broker: {advanced_config: {tcp_listeners: 1}}\nload: {messages: 100}", ExitUsage, "rmqtorture: s.yaml:4:47: scenarios[0].broker.advanced_config.tcp_listeners: rmqtorture's own broker setup needs tcp_listeners: a scenario cannot change it"),
		scen("advanced_config value a string", "broker: {advanced_config: {channel_tick_interval: fast}}\nload: {messages: 100}", ExitUsage, "rmqtorture: s.yaml:4:55: scenarios[0].broker.advanced_config.channel_tick_interval: must be a whole number, got \"fast\""),
		scen("advanced_config key not an atom", "broker: {advanced_config: {Channel-Tick: 1}}\nload: {messages: 100}", ExitUsage, "rmqtorture: s.yaml:4:46: scenarios[0].broker.advanced_config.Channel-Tick: \"Channel-Tick\" is not a key of the rabbit application (a lower-case name such as channel_tick_interval)"),
		// queue
		scen("queue.type lazy", "queue: {type: lazy}\nload: {messages: 100}", ExitUsage, "rmqtorture: s.yaml:4:19: scenarios[0].queue.type: \"lazy\" is not a queue type (quorum, classic, stream)"),
		scen("queue.type a number", "queue: {type: 5}\nload: {messages: 100}", ExitUsage, "rmqtorture: s.yaml:4:19: scenarios[0].queue.type: must be a queue type, got \"5\""),
		scen("non-durable quorum queue", "queue: {type: quorum, durable: false}\nload: {messages: 100}", ExitUsage, "rmqtorture: s.yaml:4:36: scenarios[0].queue.durable: quorum queues are always durable; use type: classic for a non-durable queue"),
		scen("durable a string", "queue: {type: classic, durable: yes}\nload: {messages: 100}", ExitUsage, "rmqtorture: s.yaml:4:37: scenarios[0].queue.durable: must be true or false, got \"yes\""),
		scen("x-max-length negative", "queue: {arguments: {x-max-length: -1}}\nload: {messages: 100}", ExitUsage, "rmqtorture: s.yaml:4:39: scenarios[0].queue.arguments.x-max-length: must not be negative, got -1"),
		scen("x-max-length a string", "queue: {arguments: {x-max-length: ten}}\nload: {messages: 100}", ExitUsage, "rmqtorture: s.yaml:4:39: scenarios[0].queue.arguments.x-max-length: must be a whole number, got \"ten\""),
		scen("x-overflow drop-tail", "queue: {arguments: {x-max-length: 10, x-overflow: drop-tail}}\nload: {messages: 100}", ExitUsage, "rmqtorture: s.yaml:4:55: scenarios[0].queue.arguments.x-overflow: \"drop-tail\" is not an overflow behaviour (drop-head, reject-publish, reject-publish-dlx)"),
		scen("unknown queue argument", "queue: {arguments: {x-queue-mode: lazy}}\nload: {messages: 100}", ExitUsage, "rmqtorture: s.yaml:4:25: scenarios[0].queue.arguments.x-queue-mode: unknown queue argument (known: x-dead-letter-exchange, x-dead-letter-routing-key, x-dead-letter-strategy, x-delivery-limit, x-max-length, x-max-length-bytes, x-stream-max-segment-size-bytes, x-message-ttl, x-overflow, x-single-active-consumer, x-quorum-initial-group-size)"),
		scen("x-message-ttl negative", "queue: {arguments: {x-message-ttl: -5}}\nload: {messages: 100}", ExitUsage, "rmqtorture: s.yaml:4:40: scenarios[0].queue.arguments.x-message-ttl: must not be negative, got -5"),
		scen("x-delivery-limit a string", "queue: {arguments: {x-delivery-limit: many}}\nload: {messages: 100}", ExitUsage, "rmqtorture: s.yaml:4:43: scenarios[0].queue.arguments.x-delivery-limit: must be a whole number, got \"many\""),
		scen("dead-letter exchange twice", "queue: {dead_letter_queue: true, arguments: {x-dead-letter-exchange: dlx}}\nload: {messages: 100}", ExitUsage, "rmqtorture: s.yaml:4:74: scenarios[0].queue.arguments.x-dead-letter-exchange: queue.dead_letter_queue sets x-dead-letter-exchange itself; remove one of the two"),
		scen("dead_letter_arguments without a dead-letter queue", "queue: {dead_letter_arguments: {x-max-length: 10}}\nload: {messages: 100}", ExitUsage, "rmqtorture: s.yaml:4:36: scenarios[0].queue.dead_letter_arguments: there is no dead-letter queue to declare with them: set queue.dead_letter_queue: true"),
		scen("dead-letter queue dead-lettering on", "queue: {dead_letter_queue: true, dead_letter_arguments: {x-dead-letter-exchange: other}}\nload: {messages: 100}", ExitUsage, "rmqtorture: s.yaml:4:86: scenarios[0].queue.dead_letter_arguments.x-dead-letter-exchange: would move messages out of the dead-letter queue, where nobody counts them"),
		scen("settle_before_burst negative", "queue: {settle_before_burst: -1s}\nload: {messages: 100}", ExitUsage, "rmqtorture: s.yaml:4:34: scenarios[0].queue.settle_before_burst: must not be negative"),
		scen("also_bind_type stream", "queue: {also_bind_type: stream}\nload: {messages: 100}", ExitUsage, "rmqtorture: s.yaml:4:29: scenarios[0].queue.also_bind_type: \"stream\" is not a queue type (quorum, classic)"),
		scen("queue a list", "queue: [quorum]\nload: {messages: 100}", ExitUsage, "rmqtorture: s.yaml:4:12: scenarios[0].queue: must be a mapping, got a list"),
		// load
		scen("load missing", "description: no load", ExitUsage, "rmqtorture: s.yaml:3:5: scenarios[0].load.messages: missing; write how many orders the burst publishes (1–10000000), e.g. messages: 1000"),
		scen("messages 0", "load: {messages: 0}", ExitUsage, "rmqtorture: s.yaml:4:22: scenarios[0].load.messages: must be within 1–10000000, got 0"),
		scen("messages negative", "load: {messages: -5}", ExitUsage, "rmqtorture: s.yaml:4:22: scenarios[0].load.messages: must be within 1–10000000, got -5"),
		scen("messages above the limit", "load: {messages: 10000001}", ExitUsage, "rmqtorture: s.yaml:4:22: scenarios[0].load.messages: must be within 1–10000000, got 10000001"),
		scen("messages a string", "load: {messages: many}", ExitUsage, "rmqtorture: s.yaml:4:22: scenarios[0].load.messages: must be a whole number, got \"many\""),
		scen("messages a fraction", "load: {messages: 1.5}", ExitUsage, "rmqtorture: s.yaml:4:22: scenarios[0].load.messages: must be a whole number, got \"1.5\""),
		scen("modes empty", "load: {messages: 100, modes: []}", ExitUsage, "rmqtorture: s.yaml:4:34: scenarios[0].load.modes: must list at least one mode (fire-and-forget, confirm-each, confirm-window, transactional)"),
		scen("mode misspelt", "load: {messages: 100, modes: [fire-and-forgot]}", ExitUsage, "rmqtorture: s.yaml:4:35: scenarios[0].load.modes[0]: \"fire-and-forgot\" is not a mode (fire-and-forget, confirm-each, confirm-window, transactional); did you mean fire-and-forget?"),
		scen("mode listed twice", "load: {messages: 100, modes: [confirm-each, confirm-each]}", ExitUsage, "rmqtorture: s.yaml:4:49: scenarios[0].load.modes[1]: \"confirm-each\" listed twice"),
		scen("modes a scalar", "load: {messages: 100, modes: confirm-each}", ExitUsage, "rmqtorture: s.yaml:4:34: scenarios[0].load.modes: must be a list, got \"confirm-each\""),
		scen("window 0", "load: {messages: 100, window: 0}", ExitUsage, "rmqtorture: s.yaml:4:35: scenarios[0].load.window: must be within 1–65535, got 0"),
		scen("window negative", "load: {messages: 100, window: -1}", ExitUsage, "rmqtorture: s.yaml:4:35: scenarios[0].load.window: must be within 1–65535, got -1"),
		scen("confirm_timeout 0s", "load: {messages: 100, confirm_timeout: 0s}", ExitUsage, "rmqtorture: s.yaml:4:44: scenarios[0].load.confirm_timeout: must be at least 1ms, got 0s"),
		scen("confirm_timeout a number", "load: {messages: 100, confirm_timeout: 30}", ExitUsage, "rmqtorture: s.yaml:4:44: scenarios[0].load.confirm_timeout: must be a duration (use e.g. 5s, 250ms), got \"30\""),
		scen("republish always", "load: {messages: 100, republish: always}", ExitUsage, "rmqtorture: s.yaml:4:38: scenarios[0].load.republish: \"always\" is not a republish policy (in-doubt, nacked-and-in-doubt, none)"),
		scen("reconnect_timeout in words", "load: {messages: 100, reconnect_timeout: 1 minute}", ExitUsage, "rmqtorture: s.yaml:4:46: scenarios[0].load.reconnect_timeout: \"1 minute\" is not a duration (use e.g. 5s, 250ms)"),
		scen("stall_timeout 0ms", "load: {messages: 100, stall_timeout: 0ms}", ExitUsage, "rmqtorture: s.yaml:4:42: scenarios[0].load.stall_timeout: must be at least 1ms, got 0s"),
		scen("heartbeat below 1s", "load: {messages: 100, heartbeat: 500ms}", ExitUsage, "rmqtorture: s.yaml:4:38: scenarios[0].load.heartbeat: must be at least 1s (AMQP heartbeats count whole seconds), got 500ms"),
		scen("heartbeat over 10m", "load: {messages: 100, heartbeat: 11m}", ExitUsage, "rmqtorture: s.yaml:4:38: scenarios[0].load.heartbeat: must be at most 10m, got 11m"),
		scen("burst_timeout below 1ms", "load: {messages: 100, burst_timeout: 500us}", ExitUsage, "rmqtorture: s.yaml:4:42: scenarios[0].load.burst_timeout: must be at least 1ms, got 500µs"),
		scen("message_deadline 0s", "load: {messages: 100, message_deadline: 0s}", ExitUsage, "rmqtorture: s.yaml:4:45: scenarios[0].load.message_deadline: must be at least 1ms, got 0s"),
		scen("confirm_listener_buffer below the window", "load: {messages: 100, window: 1000, confirm_listener_buffer: 10}", ExitUsage, "rmqtorture: s.yaml:4:66: scenarios[0].load.confirm_listener_buffer: 10 is below the window 1000: a full confirm listener stalls amqp091-go's reader (streadway/amqp#254) and, since v1.13, makes it drop confirms; leave it unset to size it for the window"),
		scen("rate negative", "load: {messages: 100, rate: -1}", ExitUsage, "rmqtorture: s.yaml:4:33: scenarios[0].load.rate: must be a finite number ≥ 0 (msg/s; 0: as fast as possible), got -1"),
		scen("rate NaN", "load: {messages: 100, rate: .nan}", ExitUsage, "rmqtorture: s.yaml:4:33: scenarios[0].load.rate: must be a number, got \".nan\""),
		scen("rate infinite", "load: {messages: 100, rate: .inf}", ExitUsage, "rmqtorture: s.yaml:4:33: scenarios[0].load.rate: must be a number, got \".inf\""),
		scen("channels per connection above publishers", "load: {messages: 100, channels_per_connection: 2}", ExitUsage, "rmqtorture: s.yaml:4:52: scenarios[0].load.channels_per_connection: 2 channels per connection but only 1 publishers: raise load.publishers (each channel is one publisher)"),
		scen("shared connections with fire-and-forget", "load: {messages: 100, publishers: 2, channels_per_connection: 2}", ExitUsage, "rmqtorture: s.yaml:4:67: scenarios[0].load.channels_per_connection: shared connections are for the confirm modes and transactional: fire-and-forget publishers close their connection when done, so each needs its own (drop fire-and-forget from load.modes)"),
		scen("on_confirm_timeout republish without confirms", "load: {messages: 100, modes: [fire-and-forget], on_confirm_timeout: republish}", ExitUsage, "rmqtorture: s.yaml:4:73: scenarios[0].load.on_confirm_timeout: republish acts on confirms, and load.modes has no confirm mode (confirm-each, confirm-window)"),
		scen("on_confirm_timeout retry", "load: {messages: 100, on_confirm_timeout: retry}", ExitUsage, "rmqtorture: s.yaml:4:47: scenarios[0].load.on_confirm_timeout: \"retry\" is not a confirm timeout action (close, republish)"),
		scen("burst and rate", "load: {messages: 100, rate: 10, burst: {messages: 10, every: 1s}}", ExitUsage, "rmqtorture: s.yaml:4:44: scenarios[0].load.burst: load.burst and load.rate both schedule the publish calls: use one"),
		scen("burst without messages", "load: {messages: 100, burst: {every: 1s}}", ExitUsage, "rmqtorture: s.yaml:4:34: scenarios[0].load.burst.messages: missing: how many publish calls each burst makes"),
		scen("burst larger than the load", "load: {messages: 100, burst: {messages: 200, every: 1s}}", ExitUsage, "rmqtorture: s.yaml:4:45: scenarios[0].load.burst.messages: 200 is more than load.messages 100: the load would be one burst"),
		scen("burst without every", "load: {messages: 100, burst: {messages: 10}}", ExitUsage, "rmqtorture: s.yaml:4:34: scenarios[0].load.burst.every: missing: the time from one burst's start to the next's"),
		scen("burst every 0s", "load: {messages: 100, burst: {messages: 10, every: 0s}}", ExitUsage, "rmqtorture: s.yaml:4:56: scenarios[0].load.burst.every: must be at least 1ms, got 0s"),
		scen("bursts outlast burst_timeout", "load: {messages: 100, burst_timeout: 5s, burst: {messages: 10, every: 1s}}", ExitUsage, "rmqtorture: s.yaml:4:75: scenarios[0].load.burst.every: 10 bursts every 1s take 9s, not less than load.burst_timeout 5s"),
		scen("message_size_bytes negative", "load: {messages: 100, message_size_bytes: -1}", ExitUsage, "rmqtorture: s.yaml:4:47: scenarios[0].load.message_size_bytes: must be within 0–1048576 (1 MiB), got -1"),
		scen("message_size_bytes above 1 MiB", "load: {messages: 100, message_size_bytes: 2000000}", ExitUsage, "rmqtorture: s.yaml:4:47: scenarios[0].load.message_size_bytes: must be within 0–1048576 (1 MiB), got 2000000"),
		scen("publishers 0", "load: {messages: 100, publishers: 0}", ExitUsage, "rmqtorture: s.yaml:4:39: scenarios[0].load.publishers: must be within 1–64, got 0"),
		scen("tx_size 0", "load: {messages: 100, modes: [transactional], tx_size: 0}", ExitUsage, "rmqtorture: s.yaml:4:60: scenarios[0].load.tx_size: must be within 1–65535, got 0"),
		scen("unroutable_every negative", "load: {messages: 100, unroutable_every: -1}", ExitUsage, "rmqtorture: s.yaml:4:45: scenarios[0].load.unroutable_every: must not be negative, got -1"),
		scen("persistent a string", "load: {messages: 100, persistent: no}", ExitUsage, "rmqtorture: s.yaml:4:39: scenarios[0].load.persistent: must be true or false, got \"no\""),
		scen("load unknown key", "load: {messages: 100, messsages: 5}", ExitUsage, "rmqtorture: s.yaml:4:27: scenarios[0].load.messsages: unknown field (known: messages, modes, window, confirm_timeout, republish, reconnect_timeout, unroutable_every, stall_timeout, heartbeat, burst_timeout, message_deadline, persistent, rate, connect_to, connect_node, message_size_bytes, confirm_listener_buffer, publishers, channels_per_connection, tx_size, on_confirm_timeout, burst)"),
		// consumers
		scen("consumers.count negative", "load: {messages: 100}\nconsumers: {count: -1}", ExitUsage, "rmqtorture: s.yaml:5:24: scenarios[0].consumers.count: must be within 0–64, got -1"),
		scen("prefetch without consumers", "load: {messages: 100}\nconsumers: {prefetch: 10}", ExitUsage, "rmqtorture: s.yaml:5:27: scenarios[0].consumers.prefetch: has no effect without live consumers: set consumers.count"),
		scen("ack_every above prefetch", "load: {messages: 100}\nconsumers: {count: 1, prefetch: 10, ack_every: 20}", ExitUsage, "rmqtorture: s.yaml:5:52: scenarios[0].consumers.ack_every: must be within 1–10 (the prefetch: a consumer never holds more unacknowledged deliveries), got 20"),
		scen("retry without a dead-letter queue", "load: {messages: 100}\nconsumers: {count: 1, on_delivery: retry}", ExitUsage, "rmqtorture: s.yaml:5:40: scenarios[0].consumers.on_delivery: retry parks messages in the dead-letter queue after max_retries: set queue.dead_letter_queue: true"),
		scen("on_delivery unknown", "load: {messages: 100}\nconsumers: {count: 1, on_delivery: explode}", ExitUsage, "rmqtorture: s.yaml:5:40: scenarios[0].consumers.on_delivery: \"explode\" is not a consumer action (ack, nack-requeue, reject, retry)"),
		scen("max_retries without retry", "load: {messages: 100}\nconsumers: {count: 1, max_retries: 3}", ExitUsage, "rmqtorture: s.yaml:5:40: scenarios[0].consumers.max_retries: only on_delivery: retry uses max_retries"),
		scen("nack-requeue on a classic queue", "queue: {type: classic}\nload: {messages: 100}\nconsumers: {count: 1, on_delivery: nack-requeue}", ExitUsage, "rmqtorture: s.yaml:6:40: scenarios[0].consumers.on_delivery: nack-requeue on a classic queue cycles until drain.timeout: classic queues have no delivery limit (use a quorum queue, or reject)"),
		scen("max_deliveries without nack-requeue", "load: {messages: 100}\nconsumers: {count: 1, max_deliveries: 3}", ExitUsage, "rmqtorture: s.yaml:5:43: scenarios[0].consumers.max_deliveries: only on_delivery: nack-requeue requeues, so only it needs a bound"),
		scen("delivery limit lifted under nack-requeue", "queue: {arguments: {x-delivery-limit: -1}}\nload: {messages: 100}\nconsumers: {count: 1, on_delivery: nack-requeue}", ExitUsage, "rmqtorture: s.yaml:6:40: scenarios[0].consumers.on_delivery: x-delivery-limit -1 lifts the broker's limit: nack-requeue then cycles until drain.timeout; set consumers.max_deliveries"),
		scen("processing_delay negative", "load: {messages: 100}\nconsumers: {count: 1, processing_delay: -1s}", ExitUsage, "rmqtorture: s.yaml:5:45: scenarios[0].consumers.processing_delay: must not be negative"),
		scen("hold negative", "load: {messages: 100}\nconsumers: {count: 1, hold: -1s}", ExitUsage, "rmqtorture: s.yaml:5:33: scenarios[0].consumers.hold: must not be negative"),
		scen("crash-consumer with reject", "queue: {dead_letter_queue: true}\nload: {messages: 100}\nconsumers: {count: 1, on_delivery: reject}\nfaults: [{action: crash-consumer, published: 50}]", ExitUsage, "rmqtorture: s.yaml:7:23: scenarios[0].faults[0].action: crash-consumer crashes before an ack: it needs consumers.on_delivery: ack"),
		// faults
		scen("action unknown", "load: {messages: 100}\nfaults: [{action: explode, published: 50}]", ExitUsage, "rmqtorture: s.yaml:5:23: scenarios[0].faults[0].action: \"explode\" is not a fault action ("+allActions+")"),
		scen("no trigger", "load: {messages: 100}\nfaults: [{action: kill}]", ExitUsage, "rmqtorture: s.yaml:5:14: scenarios[0].faults[0]: needs exactly one trigger (published_percent, published, in_flight, after, after_burst or after_start), got 0"),
		scen("two triggers", "load: {messages: 100}\nfaults: [{action: kill, published: 50, after: 1s}]", ExitUsage, "rmqtorture: s.yaml:5:14: scenarios[0].faults[0]: needs exactly one trigger (published_percent, published, in_flight, after, after_burst or after_start), got 2"),
		scen("published_percent above 100", "load: {messages: 100}\nfaults: [{action: kill, published_percent: 150}]", ExitUsage, "rmqtorture: s.yaml:5:48: scenarios[0].faults[0].published_percent: must be within 0–100, got 150"),
		scen("published_percent negative", "load: {messages: 100}\nfaults: [{action: kill, published_percent: -1}]", ExitUsage, "rmqtorture: s.yaml:5:48: scenarios[0].faults[0].published_percent: must be within 0–100, got -1"),
		scen("published beyond the burst", "load: {messages: 100}\nfaults: [{action: kill, published: 200}]", ExitUsage, "rmqtorture: s.yaml:5:40: scenarios[0].faults[0].published: must be within 0–100 (load.messages), got 200"),
		scen("signal on stop", "load: {messages: 100}\nfaults: [{action: stop, signal: SIGTERM, published: 50}]", ExitUsage, "rmqtorture: s.yaml:5:37: scenarios[0].faults[0].signal: only kill takes a signal, not stop"),
		scen("signal unknown", "load: {messages: 100}\nfaults: [{action: kill, signal: SIGFOO, published: 50}]", ExitUsage, "rmqtorture: s.yaml:5:37: scenarios[0].faults[0].signal: \"SIGFOO\" is not a signal (SIGKILL, SIGTERM, SIGINT, SIGQUIT, SIGHUP, SIGUSR1, SIGUSR2, SIGABRT)"),
		scen("down on close-connections", "load: {messages: 100}\nfaults: [{action: close-connections, published: 50, down: 1s}]", ExitUsage, "rmqtorture: s.yaml:5:63: scenarios[0].faults[0].down: close-connections has nothing to recover; down applies to "+downActions(1)),
		scen("down negative", "load: {messages: 100}\nfaults: [{action: kill, published: 50, down: -1s}]", ExitUsage, "rmqtorture: s.yaml:5:50: scenarios[0].faults[0].down: must not be negative"),
		scen("grace on kill", "load: {messages: 100}\nfaults: [{action: kill, published: 50, grace: 1s}]", ExitUsage, "rmqtorture: s.yaml:5:51: scenarios[0].faults[0].grace: only stop and restart take a grace period, not kill"),
		scen("grace negative", "load: {messages: 100}\nfaults: [{action: stop, published: 50, grace: -1s}]", ExitUsage, "rmqtorture: s.yaml:5:51: scenarios[0].faults[0].grace: must not be negative"),
		scen("count without every", "load: {messages: 100}\nfaults: [{action: kill, after: 1s, count: 2}]", ExitUsage, "rmqtorture: s.yaml:5:47: scenarios[0].faults[0].count: count repeats a step and needs every"),
		scen("every without count", "load: {messages: 100}\nfaults: [{action: kill, after: 1s, every: 1s}]", ExitUsage, "rmqtorture: s.yaml:5:47: scenarios[0].faults[0].every: every needs count (how many times the step fires, at least 2)"),
		scen("every 0s", "load: {messages: 100}\nfaults: [{action: kill, after: 1s, every: 0s, count: 2}]", ExitUsage, "rmqtorture: s.yaml:5:47: scenarios[0].faults[0].every: must be at least 1ms, got 0s"),
		scen("count 1", "load: {messages: 100}\nfaults: [{action: kill, after: 1s, every: 1s, count: 1}]", ExitUsage, "rmqtorture: s.yaml:5:58: scenarios[0].faults[0].count: must be within 2–100, got 1"),
		scen("jitter negative", "load: {messages: 100}\nfaults: [{action: kill, published: 50, jitter: -1s}]", ExitUsage, "rmqtorture: s.yaml:5:52: scenarios[0].faults[0].jitter: must not be negative"),
		scen("manual_recovery with down", "load: {messages: 100}\nfaults: [{action: stop, after: 1s, manual_recovery: true, down: 1s}, {action: start, after: 5s}]", ExitUsage, "rmqtorture: s.yaml:5:69: scenarios[0].faults[0].down: manual_recovery: a later step recovers, so down has no meaning"),
		scen("broker left stopped", "load: {messages: 100}\nfaults: [{action: stop, after: 1s, manual_recovery: true}]", ExitUsage, "rmqtorture: s.yaml:5:14: scenarios[0].faults[0]: the broker would stay stopped at the end: add a start step"),
		scen("start without a stop", "load: {messages: 100}\nfaults: [{action: start, after: 1s}]", ExitUsage, "rmqtorture: s.yaml:5:23: scenarios[0].faults[0].action: start needs a broker left stopped by an earlier step with manual_recovery, but it is up here"),
		scen("start on a count trigger", "load: {messages: 100}\nfaults: [{action: stop, after: 1s, manual_recovery: true}, {action: start, published: 50}]", ExitUsage, "rmqtorture: s.yaml:5:64: scenarios[0].faults[1]: start must be triggered by after: nothing is published while the broker is stopped"),
		scen("manual_recovery on a count trigger", "load: {messages: 100}\nfaults: [{action: pause, published: 50, manual_recovery: true}, {action: unpause, after: 5s}]", ExitUsage, "rmqtorture: s.yaml:5:62: scenarios[0].faults[0].manual_recovery: a step recovered by a later one must be triggered by after (or after_burst), so its recovery cannot come due before it"),
		scen("in_flight on two steps", "load: {messages: 100, modes: [confirm-window]}\nfaults: [{action: kill, in_flight: 10}, {action: kill, in_flight: 20}]", ExitUsage, "rmqtorture: s.yaml:5:40: scenarios[0].faults[0].in_flight: an in_flight trigger is only possible on a single-step timeline"),
		scen("trigger kinds mixed", "load: {messages: 100}\nfaults: [{action: kill, published: 10}, {action: kill, after: 30s}]", ExitUsage, "rmqtorture: s.yaml:5:13: scenarios[0].faults: mixes trigger kinds (after, published): use either published/published_percent or after for every fault step"),
		scen("count triggers going back", "load: {messages: 100}\nfaults: [{action: kill, published: 80}, {action: kill, published: 50}]", ExitUsage, "rmqtorture: s.yaml:5:45: scenarios[0].faults[1]: triggers at 50 published, before faults[0] (80): steps run in order"),
		scen("timed steps overlapping", "load: {messages: 100}\nfaults: [{action: kill, after: 1s, down: 5s}, {action: kill, after: 2s}]", ExitUsage, "rmqtorture: s.yaml:5:73: scenarios[0].faults[1].after: 2s overlaps the previous step, which lasts until 6s after burst start"),
		scen("crash-consumer without consumers", "load: {messages: 100}\nfaults: [{action: crash-consumer, published: 50}]", ExitUsage, "rmqtorture: s.yaml:5:23: scenarios[0].faults[0].action: crash-consumer needs live consumers: set consumers.count"),
		scen("after_burst repeating", "load: {messages: 100}\nfaults: [{action: kill, after_burst: 1s, every: 1s, count: 2}]", ExitUsage, "rmqtorture: s.yaml:5:53: scenarios[0].faults[0].every: an after_burst step cannot repeat: the burst it follows is over"),
		scen("step after an after_burst step", "load: {messages: 100}\nfaults: [{action: kill, after_burst: 1s}, {action: kill, after: 1s}]", ExitUsage, "rmqtorture: s.yaml:5:47: scenarios[0].faults[1]: comes after faults[0], which fires after the burst: steps run in order, so every later step needs after_burst (or after_start) too"),
		scen("after_start first", "load: {messages: 100}\nfaults: [{action: kill, after_start: 1s}]", ExitUsage, "rmqtorture: s.yaml:5:42: scenarios[0].faults[0].after_start: the first step has no earlier step that starts the container; use after (since the burst start)"),
		scen("after_start after a pause", "load: {messages: 100}\nfaults: [{action: close-connections, after: 1s}, {action: kill, after_start: 1s}]", ExitUsage, "rmqtorture: s.yaml:5:82: scenarios[0].faults[1].after_start: faults[0] (close-connections) does not end by starting the broker's container once: after_start follows start, restart, or a kill or stop recovered after down"),
		scen("after_start on close-connections", "load: {messages: 100}\nfaults: [{action: kill, after: 1s}, {action: close-connections, after_start: 1s}]", ExitUsage, "rmqtorture: s.yaml:5:82: scenarios[0].faults[1].after_start: close-connections needs a booted node; a node still booting can only be hit on its container (kill, stop, restart, pause, disconnect)"),
		scen("power-loss without a lazy filesystem", "load: {messages: 100}\nfaults: [{action: power-loss, published: 50}]", ExitUsage, "rmqtorture: s.yaml:5:23: scenarios[0].faults[0].action: power-loss needs the broker's data on a filesystem that can forget: set broker.filesystem: lazy (a kill alone keeps what the kernel cached, so nothing unsynced would be lost)"),
		scen("broker.filesystem unknown", "broker: {filesystem: tmpfs}\nload: {messages: 100}", ExitUsage, "rmqtorture: s.yaml:4:26: scenarios[0].broker.filesystem: \"tmpfs\" is not one of (lazy)"),
		scen("delete-queue with consumers", "load: {messages: 100}\nconsumers: {count: 1}\nfaults: [{action: delete-queue, published: 50}]", ExitUsage, "rmqtorture: s.yaml:6:23: scenarios[0].faults[0].action: delete-queue cancels live consumers' subscriptions (basic.cancel) and they do not subscribe again: use purge-queue, or no consumers"),
		scen("delete-queue with a dead-letter queue", "queue: {dead_letter_queue: true}\nload: {messages: 100}\nfaults: [{action: delete-queue, published: 50}]", ExitUsage, "rmqtorture: s.yaml:6:23: scenarios[0].faults[0].action: delete-queue re-declares only the queue under test: it cannot be combined with queue.also_bind_type or queue.dead_letter_queue"),
		scen("two misroutes", "load: {messages: 100}\nfaults: [{action: publish-to-missing-exchange, published: 10}, {action: publish-to-missing-exchange, published: 20}]", ExitUsage, "rmqtorture: s.yaml:5:77: scenarios[0].faults[1].action: only one publish-to-missing-exchange step per scenario"),
		scen("misroute repeating", "load: {messages: 100}\nfaults: [{action: publish-to-missing-exchange, after: 1s, every: 1s, count: 2}]", ExitUsage, "rmqtorture: s.yaml:5:70: scenarios[0].faults[0].every: publish-to-missing-exchange cannot repeat (one misrouted message per scenario)"),
		scen("faults a mapping", "load: {messages: 100}\nfaults: {action: kill}", ExitUsage, "rmqtorture: s.yaml:5:13: scenarios[0].faults: must be a list, got a mapping"),
		scen("fault unknown key", "load: {messages: 100}\nfaults: [{action: kill, published: 50, downtime: 5s}]", ExitUsage, "rmqtorture: s.yaml:5:44: scenarios[0].faults[0].downtime: unknown field (known: action, signal, published_percent, published, after, in_flight, down, manual_recovery, grace, every, count, jitter, after_burst, after_start, target, node, shape, inject, recover, timeout, ready, state)"),
		// command steps (commands.go)
		scen("command without inject", "load: {messages: 100}\nfaults: [{action: command, published: 50}]", ExitUsage, "rmqtorture: s.yaml:5:14: scenarios[0].faults[0].inject: missing; a command step names the command that injects its fault, e.g. [docker, kill, --signal, KILL, my-broker]"),
		scen("command inject empty", "load: {messages: 100}\nfaults: [{action: command, published: 50, inject: []}]", ExitUsage, "rmqtorture: s.yaml:5:55: scenarios[0].faults[0].inject: empty; give a program and its arguments, e.g. [docker, start, my-broker] (no shell: write [sh, -c, \"…\"] for one)"),
		scen("command program empty", "load: {messages: 100}\nfaults: [{action: command, published: 50, inject: [\"\", kill]}]", ExitUsage, "rmqtorture: s.yaml:5:56: scenarios[0].faults[0].inject[0]: empty; the first item is the program to run"),
		scen("command recover empty", "load: {messages: 100}\nfaults: [{action: command, published: 50, inject: [docker, kill, b], recover: []}]", ExitUsage, "rmqtorture: s.yaml:5:83: scenarios[0].faults[0].recover: empty; give a program and its arguments, e.g. [docker, start, my-broker] (no shell: write [sh, -c, \"…\"] for one)"),
		scen("command inject not text", "load: {messages: 100}\nfaults: [{action: command, published: 50, inject: docker kill b}]", ExitUsage, "rmqtorture: s.yaml:5:55: scenarios[0].faults[0].inject: must be a list, got \"docker kill b\""),
		scen("command timeout 0s", "load: {messages: 100}\nfaults: [{action: command, published: 50, inject: [docker, kill, b], timeout: 0s}]", ExitUsage, "rmqtorture: s.yaml:5:83: scenarios[0].faults[0].timeout: must be at least 1s, got 0s"),
		scen("command timeout 11m", "load: {messages: 100}\nfaults: [{action: command, published: 50, inject: [docker, kill, b], timeout: 11m}]", ExitUsage, "rmqtorture: s.yaml:5:83: scenarios[0].faults[0].timeout: must be at most 10m, got 11m"),
		scen("command unknown key", "load: {messages: 100}\nfaults: [{action: command, published: 50, inject: [docker, kill, b], recovery: [docker, start, b]}]", ExitUsage, "rmqtorture: s.yaml:5:74: scenarios[0].faults[0].recovery: unknown field (known: action, signal, published_percent, published, after, in_flight, down, manual_recovery, grace, every, count, jitter, after_burst, after_start, target, node, shape, inject, recover, timeout, ready, state)"),
		scen("command ready http", "load: {messages: 100}\nfaults: [{action: command, published: 50, inject: [docker, kill, b], ready: [\"http://alice:Pw0rdX@host/\"]}]", ExitUsage, "rmqtorture: s.yaml:5:82: scenarios[0].faults[0].ready[0]: not an AMQP URI: the scheme is \"http\"; use amqp:// (or amqps:// for TLS)"),
		scen("command ready bad port", "load: {messages: 100}\nfaults: [{action: command, published: 50, inject: [docker, kill, b], ready: [\"amqp://alice:Pw0rdX@host:99999/\"]}]", ExitUsage, "rmqtorture: s.yaml:5:82: scenarios[0].faults[0].ready[0]: not an AMQP URI: port \"99999\" is not within 1–65535"),
		scen("command ready password with a bare #", "load: {messages: 100}\nfaults: [{action: command, published: 50, inject: [docker, kill, b], ready: [\"amqp://alice:Pw#0rdX@/\"]}]", ExitUsage, "rmqtorture: s.yaml:5:82: scenarios[0].faults[0].ready[0]: not an AMQP URI: it does not parse as a URL (a password with a reserved character such as @, :, /, ? or # must be percent-encoded)"),
		scen("command with a target", "broker: {nodes: 3}\nload: {messages: 100}\nfaults: [{action: command, published: 50, inject: [docker, kill, b], target: leader}]", ExitUsage, "rmqtorture: s.yaml:6:82: scenarios[0].faults[0].target: a command step acts on what its commands name, not on a node rmqtorture picks: leave target out"),
		scen("command state unknown", "load: {messages: 100}\nfaults: [{action: command, published: 50, inject: [docker, kill, b], state: frozen}]", ExitUsage, "rmqtorture: s.yaml:5:81: scenarios[0].faults[0].state: \"frozen\" is not one of (down, paused, disconnected)"),
		scen("inject on kill", "load: {messages: 100}\nfaults: [{action: kill, published: 50, inject: [docker, kill, b]}]", ExitUsage, "rmqtorture: s.yaml:5:52: scenarios[0].faults[0].inject: only command takes inject, not kill"),
		scen("timeout on kill", "load: {messages: 100}\nfaults: [{action: kill, published: 50, timeout: 5s}]", ExitUsage, "rmqtorture: s.yaml:5:53: scenarios[0].faults[0].timeout: only command and assert-whole take timeout, not kill"),
		scen("command manual_recovery", "load: {messages: 100}\nfaults: [{action: command, after: 1s, inject: [docker, kill, b], manual_recovery: true}]", ExitUsage, "rmqtorture: s.yaml:5:87: scenarios[0].faults[0].manual_recovery: only kill, power-loss, stop, pause, disconnect can be recovered by a later step"),
		// clusters
		scen("broker.nodes 4", "broker: {nodes: 4}\nload: {messages: 100}", ExitUsage, "rmqtorture: s.yaml:4:21: scenarios[0].broker.nodes: must be 1, 3 or 5, got 4: a quorum queue needs a majority of its members up, and 4 nodes lose it with 2 down, as 3 nodes do: the extra node adds no tolerance"),
		scen("broker.nodes 7", "broker: {nodes: 7}\nload: {messages: 100}", ExitUsage, "rmqtorture: s.yaml:4:21: scenarios[0].broker.nodes: must be 1, 3 or 5, got 7: a single broker, or a cluster of an odd size (a quorum queue keeps its majority with 1 of 3 or 2 of 5 nodes down)"),
		scen("a stream published in transactions", "queue: {type: stream}\nload: {messages: 100, modes: [confirm-each, transactional]}", ExitUsage, "rmqtorture: s.yaml:5:49: scenarios[0].load.modes[1]: not supported with queue.type: stream: transactional is AMQP 0-9-1's tx.select, and the stream publisher speaks the stream protocol, which has no transactions (use fire-and-forget, confirm-each or confirm-window)"),
		scen("stream segments on a quorum queue", "queue: {type: quorum, arguments: {x-stream-max-segment-size-bytes: 100000}}\nload: {messages: 100}", ExitUsage, "rmqtorture: s.yaml:4:72: scenarios[0].queue.arguments.x-stream-max-segment-size-bytes: only a stream has segments: set queue.type: stream"),
		scen("connect_to on a stream on a cluster", "broker: {nodes: 3}\nqueue: {type: stream}\nload: {messages: 100, modes: [confirm-window], connect_to: leader}", ExitUsage, "rmqtorture: s.yaml:6:64: scenarios[0].load.connect_to: queue.type is stream: a stream client connects to the node the stream's metadata names (its leader to publish, a replica to read), not to the node connect_to: leader picks; leave it out"),
		scen("partition of a stream's cluster", "broker: {nodes: 3}\nqueue: {type: stream}\nload: {messages: 100, modes: [confirm-window]}\nfaults: [{action: partition, after: 1s}]", ExitUsage, "rmqtorture: s.yaml:7:23: scenarios[0].faults[0].action: partition cuts the links between nodes, and a stream replicates over connections to each replica's own addresses, its client-network address among them, which a partition leaves up: the cut would not reach the stream (use disconnect, kill, stop, pause or power-loss)"),
		scen("partition on a single broker", "load: {messages: 100}\nfaults: [{action: partition, after: 1s}]", ExitUsage, "rmqtorture: s.yaml:5:23: scenarios[0].faults[0].action: partition needs broker.nodes 3 or 5: it acts on the nodes of a cluster, and this scenario runs a single broker"),
		scen("target leader on a single broker", "load: {messages: 100}\nfaults: [{action: kill, after: 1s, target: leader}]", ExitUsage, "rmqtorture: s.yaml:5:48: scenarios[0].faults[0].target: leader needs broker.nodes 3 or 5: on a single broker every step acts on the broker (leave target out, or write all)"),
		scen("node on a single broker", "load: {messages: 100}\nfaults: [{action: kill, after: 1s, node: 2}]", ExitUsage, "rmqtorture: s.yaml:5:46: scenarios[0].faults[0].node: needs broker.nodes 3 or 5: a single broker has no nodes to choose from"),
		scen("target unknown", "broker: {nodes: 3}\nload: {messages: 100}\nfaults: [{action: kill, after: 1s, target: everyone}]", ExitUsage, "rmqtorture: s.yaml:6:48: scenarios[0].faults[0].target: \"everyone\" is not a fault target (node, leader, follower, random, minority, majority, all)"),
		scen("node beyond the cluster", "broker: {nodes: 3}\nload: {messages: 100}\nfaults: [{action: kill, after: 1s, node: 4}]", ExitUsage, "rmqtorture: s.yaml:6:46: scenarios[0].faults[0].node: must be within 1–3 (broker.nodes), got 4"),
		scen("node with target leader", "broker: {nodes: 3}\nload: {messages: 100}\nfaults: [{action: kill, after: 1s, target: leader, node: 2}]", ExitUsage, "rmqtorture: s.yaml:6:62: scenarios[0].faults[0].node: only target: node (or node alone) acts on a numbered node; this step's target is leader"),
		scen("target node without node", "broker: {nodes: 3}\nload: {messages: 100}\nfaults: [{action: kill, after: 1s, target: node}]", ExitUsage, "rmqtorture: s.yaml:6:14: scenarios[0].faults[0].node: missing: target: node needs the node's number (1–3)"),
		scen("kill's default leader on a classic queue", "broker: {nodes: 3}\nqueue: {type: classic}\nload: {messages: 100, connect_to: round-robin}\nfaults: [{action: kill, after: 1s}]", ExitUsage, "rmqtorture: s.yaml:7:14: scenarios[0].faults[0].target: kill acts on the queue's leader unless told otherwise, and queue.type is classic: a classic queue has no leader; set target (node, random, minority, majority or all)"),
		scen("target on purge-queue", "broker: {nodes: 3}\nload: {messages: 100}\nfaults: [{action: purge-queue, after: 1s, target: all}]", ExitUsage, "rmqtorture: s.yaml:6:55: scenarios[0].faults[0].target: purge-queue acts on the queue, wherever it lives: it takes no target"),
		scen("shape on kill", "broker: {nodes: 3}\nload: {messages: 100}\nfaults: [{action: kill, after: 1s, shape: halves}]", ExitUsage, "rmqtorture: s.yaml:6:47: scenarios[0].faults[0].shape: only partition takes a shape, not kill"),
		scen("shape unknown", "broker: {nodes: 3}\nload: {messages: 100}\nfaults: [{action: partition, after: 1s, shape: square}]", ExitUsage, "rmqtorture: s.yaml:6:52: scenarios[0].faults[0].shape: \"square\" is not a partition shape (isolate, halves, majorities-ring, bridge)"),
		scen("majorities-ring on 3 nodes", "broker: {nodes: 3}\nload: {messages: 100}\nfaults: [{action: partition, after: 1s, shape: majorities-ring}]", ExitUsage, "rmqtorture: s.yaml:6:52: scenarios[0].faults[0].shape: majorities-ring needs broker.nodes 5: on 3 nodes each node's two ring neighbours are all the others, so nothing would be cut"),
		scen("partition isolating all", "broker: {nodes: 3}\nload: {messages: 100}\nfaults: [{action: partition, after: 1s, target: all}]", ExitUsage, "rmqtorture: s.yaml:6:53: scenarios[0].faults[0].target: partition isolate cuts the target's nodes off from the others, and all leaves no others: nothing would be cut (use leader, the default, follower, node, random or minority)"),
		scen("partition halves with a majority", "broker: {nodes: 5}\nload: {messages: 100}\nfaults: [{action: partition, after: 1s, shape: halves, target: majority}]", ExitUsage, "rmqtorture: s.yaml:6:68: scenarios[0].faults[0].target: partition halves puts the target on the smaller side, and a majority is not: use minority, or shape isolate to cut a majority off from the rest"),
		scen("partition with manual_recovery", "broker: {nodes: 3}\nload: {messages: 100}\nfaults: [{action: partition, after: 1s, manual_recovery: true}]", ExitUsage, "rmqtorture: s.yaml:6:62: scenarios[0].faults[0].manual_recovery: only kill, power-loss, stop, pause, disconnect, quorum-loss can be recovered by a later step"),
		scen("quorum-loss of a minority", "broker: {nodes: 3}\nload: {messages: 100}\nfaults: [{action: quorum-loss, after: 1s, target: minority}]", ExitUsage, "rmqtorture: s.yaml:6:55: scenarios[0].faults[0].target: quorum-loss stops a majority of the nodes: its target is majority (the default) or all, not minority"),
		scen("grace on partition", "broker: {nodes: 3}\nload: {messages: 100}\nfaults: [{action: partition, after: 1s, grace: 1s}]", ExitUsage, "rmqtorture: s.yaml:6:52: scenarios[0].faults[0].grace: only stop, restart, rolling-restart and quorum-loss take a grace period, not partition"),
		scen("connect_to on a single broker", "load: {messages: 100, connect_to: round-robin}", ExitUsage, "rmqtorture: s.yaml:4:39: scenarios[0].load.connect_to: needs broker.nodes 3 or 5: a single broker is the only node clients can connect to"),
		scen("connect_to unknown", "broker: {nodes: 3}\nload: {messages: 100, connect_to: nearest}", ExitUsage, "rmqtorture: s.yaml:5:39: scenarios[0].load.connect_to: \"nearest\" is not a connection target (leader, follower, round-robin, node)"),
		scen("connect_to node without connect_node", "broker: {nodes: 3}\nload: {messages: 100, connect_to: node}", ExitUsage, "rmqtorture: s.yaml:5:11: scenarios[0].load.connect_node: missing: connect_to: node needs the node's number (1–3)"),
		scen("connect_node beyond the cluster", "broker: {nodes: 3}\nload: {messages: 100, connect_to: node, connect_node: 4}", ExitUsage, "rmqtorture: s.yaml:5:59: scenarios[0].load.connect_node: must be within 1–3 (broker.nodes), got 4"),
		scen("connect_node without connect_to node", "broker: {nodes: 3}\nload: {messages: 100, connect_node: 2}", ExitUsage, "rmqtorture: s.yaml:5:41: scenarios[0].load.connect_node: only connect_to: node names a node; connect_to is leader"),
		scen("connect_to follower on a classic queue", "broker: {nodes: 3}\nqueue: {type: classic}\nload: {messages: 100, connect_to: follower}", ExitUsage, "rmqtorture: s.yaml:6:39: scenarios[0].load.connect_to: follower needs a quorum queue, and queue.type is classic: a classic queue has no leader or followers; use round-robin or node"),
		// drain
		scen("drain.idle 0s", "load: {messages: 100}\ndrain: {idle: 0s}", ExitUsage, "rmqtorture: s.yaml:5:19: scenarios[0].drain.idle: must be at least 1ms, got 0s"),
		scen("lost_wait shorter than idle", "load: {messages: 100}\ndrain: {idle: 5s, lost_wait: 1s}", ExitUsage, "rmqtorture: s.yaml:5:34: scenarios[0].drain.lost_wait: 1s is shorter than drain.idle 5s: the drain would give up on confirmed ids before it ever counts as idle"),
		scen("drain.timeout in words", "load: {messages: 100}\ndrain: {timeout: 2 minutes}", ExitUsage, "rmqtorture: s.yaml:5:22: scenarios[0].drain.timeout: \"2 minutes\" is not a duration (use e.g. 5s, 250ms)"),
		// expect
		scen("expectation for a mode not run", "load: {messages: 100, modes: [confirm-each]}\nexpect: {modes: {confirm-window: {lost: 0}}}", ExitUsage, "rmqtorture: s.yaml:5:38: scenarios[0].expect.modes.confirm-window: \"confirm-window\" is not one of this scenario's load.modes"),
		scen("expectation negative", "load: {messages: 100}\nexpect: {modes: {confirm-each: {confirmed: -1}}}", ExitUsage, "rmqtorture: s.yaml:5:48: scenarios[0].expect.modes.confirm-each.confirmed: must not be negative, got -1"),
		scen("expectation unknown", "load: {messages: 100}\nexpect: {modes: {confirm-each: {confirmd: 100}}}", ExitUsage, "rmqtorture: s.yaml:5:37: scenarios[0].expect.modes.confirm-each.confirmd: unknown field (known: sent, confirmed, lost, nacked, returned, in_doubt, delivered, unconfirmed_delivered, unconfirmed_missing, duplicates, min_went_in_doubt, min_blocked_ms, not_published, pending_at_deadline, min_unconfirmed_missing, channel_closed_with, dead_lettered, min_redeliveries, deliveries_per_message, retries, x_death_count_at_park, max_went_in_doubt, redeliveries, republished, late_confirms, consumer_changes, lost_dead_letter_path, dead_letter_reason)"),
		scen("expectation mode misspelt", "load: {messages: 100}\nexpect: {modes: {confirm-eech: {lost: 0}}}", ExitUsage, "rmqtorture: s.yaml:5:22: scenarios[0].expect.modes.confirm-eech: unknown field (known: fire-and-forget, confirm-each, confirm-window, transactional)"),
		scen("dead_lettered without a dead-letter queue", "load: {messages: 100}\nexpect: {modes: {confirm-each: {dead_lettered: 5}}}", ExitUsage, "rmqtorture: s.yaml:5:52: scenarios[0].expect.modes.confirm-each.dead_lettered: nothing is dead-lettered without queue.dead_letter_queue: true"),
		scen("deliveries_per_message without consumers", "load: {messages: 100}\nexpect: {modes: {confirm-each: {deliveries_per_message: 1}}}", ExitUsage, "rmqtorture: s.yaml:5:61: scenarios[0].expect.modes.confirm-each.deliveries_per_message: is measured by live consumers: set consumers.count"),
		scen("retries without retrying consumers", "load: {messages: 100}\nexpect: {modes: {confirm-each: {retries: 3}}}", ExitUsage, "rmqtorture: s.yaml:5:46: scenarios[0].expect.modes.confirm-each.retries: is measured by consumers with on_delivery: retry"),
		scen("redeliveries without consumers or faults", "load: {messages: 100}\nexpect: {modes: {confirm-each: {min_redeliveries: 1}}}", ExitUsage, "rmqtorture: s.yaml:5:55: scenarios[0].expect.modes.confirm-each.min_redeliveries: nothing can be redelivered without live consumers or a fault"),
		scen("went in doubt bounds crossed", "load: {messages: 100}\nexpect: {modes: {confirm-each: {min_went_in_doubt: 5, max_went_in_doubt: 1}}}", ExitUsage, "rmqtorture: s.yaml:5:78: scenarios[0].expect.modes.confirm-each.max_went_in_doubt: 1 is below min_went_in_doubt 5: no run can meet both"),
		scen("consumer_changes without consumers", "load: {messages: 100}\nexpect: {modes: {confirm-each: {consumer_changes: 1}}}", ExitUsage, "rmqtorture: s.yaml:5:55: scenarios[0].expect.modes.confirm-each.consumer_changes: is measured by live consumers: set consumers.count"),
		scen("late_confirms without republish", "load: {messages: 100}\nexpect: {modes: {confirm-each: {late_confirms: 1}}}", ExitUsage, "rmqtorture: s.yaml:5:52: scenarios[0].expect.modes.confirm-each.late_confirms: only load.on_confirm_timeout: republish keeps an original's delivery tag tracked after its confirm timed out"),
		scen("allow_dead_letter_path_loss without a dead-letter queue", "load: {messages: 100}\nexpect: {allow_dead_letter_path_loss: true}", ExitUsage, "rmqtorture: s.yaml:5:43: scenarios[0].expect.allow_dead_letter_path_loss: has no effect without queue.dead_letter_queue: true"),
		scen("max_in_doubt negative", "load: {messages: 100}\nexpect: {max_in_doubt: -1}", ExitUsage, "rmqtorture: s.yaml:5:28: scenarios[0].expect.max_in_doubt: must not be negative, got -1"),
		scen("lost_dead_letter_path without a dead-letter queue", "load: {messages: 100}\nexpect: {modes: {confirm-each: {lost_dead_letter_path: 1}}}", ExitUsage, "rmqtorture: s.yaml:5:60: scenarios[0].expect.modes.confirm-each.lost_dead_letter_path: nothing is lost on the dead-letter path without queue.dead_letter_queue: true"),
		scen("channel_closed_with a list", "load: {messages: 100}\nexpect: {modes: {confirm-each: {channel_closed_with: [404]}}}", ExitUsage, "rmqtorture: s.yaml:5:58: scenarios[0].expect.modes.confirm-each.channel_closed_with: must be text, got a list"),
		scen("version range does not parse", "load: {messages: 100}\nexpect: {versions: [{when: {rabbitmq: \"4.0 or later\"}, because: PR, modes: {confirm-each: {lost: 0}}}]}", ExitUsage, "rmqtorture: s.yaml:5:43: scenarios[0].expect.versions[0].when.rabbitmq: \"4.0 or later\" is not a version range: improper constraint: 4.0 or later"),
		scen("version scope without because", "load: {messages: 100}\nexpect: {versions: [{when: {rabbitmq: \">=4.0\"}, modes: {confirm-each: {lost: 0}}}]}", ExitUsage, "rmqtorture: s.yaml:5:25: scenarios[0].expect.versions[0].because: must cite the source of this behaviour (release notes, an issue or a pull request)"),
		scen("version scope range twice", "load: {messages: 100}\nexpect: {versions: [{when: {rabbitmq: \">=4.3\"}, because: A, modes: {confirm-each: {lost: 0}}}, {when: {rabbitmq: \" >=4.3\"}, because: B, modes: {confirm-window: {lost: 0}}}]}", ExitUsage, "rmqtorture: s.yaml:5:118: scenarios[0].expect.versions[1].when.rabbitmq: \" >=4.3\" is already expect.versions[0]'s range, whose scope applies first: put these modes there"),
		scen("version scope for a mode not run", "load: {messages: 100, modes: [confirm-each]}\nexpect: {versions: [{when: {rabbitmq: \">=4.0\"}, because: PR, modes: {confirm-window: {lost: 0}}}]}", ExitUsage, "rmqtorture: s.yaml:5:90: scenarios[0].expect.versions[0].modes.confirm-window: \"confirm-window\" is not one of this scenario's load.modes"),
		scen("dead_letter_reason without a dead-letter queue", "load: {messages: 100}\nexpect: {modes: {confirm-each: {dead_letter_reason: rejected}}}", ExitUsage, "rmqtorture: s.yaml:5:57: scenarios[0].expect.modes.confirm-each.dead_letter_reason: nothing is dead-lettered without queue.dead_letter_queue: true"),
		// matrix
		scen("matrix queue type twice", "load: {messages: 100}\nmatrix: {queue_types: [quorum, quorum]}", ExitUsage, "rmqtorture: s.yaml:5:36: scenarios[0].matrix.queue_types[1]: \"quorum\" listed twice"),
		scen("matrix queue type stream", "load: {messages: 100}\nmatrix: {queue_types: [stream]}", ExitUsage, "rmqtorture: s.yaml:5:28: scenarios[0].matrix.queue_types[0]: \"stream\" is not a queue type (quorum, classic)"),
		scen("matrix persistence twice", "load: {messages: 100}\nmatrix: {persistent: [true, true]}", ExitUsage, "rmqtorture: s.yaml:5:33: scenarios[0].matrix.persistent[1]: true listed twice"),
		scen("matrix repeat 101", "load: {messages: 100}\nmatrix: {repeat: 101}", ExitUsage, "rmqtorture: s.yaml:5:22: scenarios[0].matrix.repeat: must be within 1–100, got 101"),
		scen("matrix repeat negative", "load: {messages: 100}\nmatrix: {repeat: -1}", ExitUsage, "rmqtorture: s.yaml:5:22: scenarios[0].matrix.repeat: must be within 1–100, got -1"),
		scen("matrix quorum with a non-durable queue", "queue: {type: classic, durable: false}\nload: {messages: 100}\nmatrix: {queue_types: [classic, quorum]}", ExitUsage, "rmqtorture: s.yaml:6:27: scenarios[0].matrix.queue_types: quorum queues are always durable, and queue.durable is false"),
	}
}

// flagCases are bad command lines: unknown commands and flags, bad values,
// missing or extra arguments, outputs that cannot be written, a scenario
// that does not exist, flags that contradict the scenario.
func flagCases() []badInput {
	return []badInput{
		flagCase("unknown command", []string{"nosuch"}, ExitUsage, "rmqtorture: unknown command \"nosuch\" for \"rmqtorture\""),
		flagCase("version with an argument", []string{"version", "x"}, ExitUsage, "rmqtorture: version takes no arguments, got \"x\""),
		flagCase("global flag bad value", []string{"list", "-f", "s.yaml", "--verbose=maybe"}, ExitUsage, "rmqtorture: invalid argument \"maybe\" for \"-v, --verbose\" flag: want true or false"),
		// run
		flagCase("run -o unknown", run("-o", "yaml"), ExitUsage, `rmqtorture: invalid argument "yaml" for "-o, --output" flag: unknown output format "yaml"; choose one of wide, json, markdown`),
		flagCase("run without a scenario", []string{"run", "-f", "s.yaml", "--out", "out"}, ExitUsage, "rmqtorture: name one or more scenarios, or --all (not both)"),
		flagCase("run a scenario and --all", run("--all"), ExitUsage, "rmqtorture: name one or more scenarios, or --all (not both)"),
		flagCase("run unknown scenario", []string{"run", "nope", "-f", "s.yaml", "--out", "out"}, ExitUsage, "rmqtorture: s.yaml: no scenario named \"nope\" (have: s)"),
		flagCase("run missing scenario file", []string{"run", "s", "-f", "nosuch.yaml", "--out", "out"}, ExitUsage, "rmqtorture: read scenario file: open nosuch.yaml: no such file or directory"),
		flagCase("run --container beside --nodes 3", run("--container", "x", "--nodes", "3"), ExitUsage, "rmqtorture: --container x names one broker and --nodes 3 asks for a cluster: name the cluster's containers with --containers a,b,c, or leave --nodes out"),
		flagCase("run --summary-file /proc/version", run("--summary-file", "/proc/version"), ExitUsage, "rmqtorture: --summary-file /proc/version: cannot append there: read-only file (mode 0444)"),
		withEnv(flagCase("run with DOCKER_API_VERSION=banana", run(), ExitUsage, "rmqtorture: DOCKER_API_VERSION=banana: not a Docker Engine API version such as 1.47; unset it and rmqtorture negotiates the version with the engine"), "DOCKER_API_VERSION", "banana"),
		withEnv(flagCase("cleanup with DOCKER_API_VERSION=banana", []string{"cleanup"}, ExitUsage, "rmqtorture: DOCKER_API_VERSION=banana: not a Docker Engine API version such as 1.47; unset it and rmqtorture negotiates the version with the engine"), "DOCKER_API_VERSION", "banana"),
		flagCase("cleanup --run empty", []string{"cleanup", "--run", ""}, ExitUsage, `rmqtorture: --run "": a run id is 1–40 letters, digits, - or _, as in result.json's run_id (the last part of a run folder's name)`),
		flagCase("cleanup --run a path", []string{"cleanup", "--run", "../x"}, ExitUsage, `rmqtorture: --run "../x": a run id is 1–40 letters, digits, - or _, as in result.json's run_id (the last part of a run folder's name)`),
		flagCase("cleanup --run a pattern", []string{"cleanup", "--run=*", "--dry-run"}, ExitUsage, `rmqtorture: --run "*": a run id is 1–40 letters, digits, - or _, as in result.json's run_id (the last part of a run folder's name)`),
		flagCase("run scenario file a named pipe", []string{"run", "s", "-f", "p.yaml", "--out", "out"}, ExitUsage, "rmqtorture: p.yaml: a named pipe, not a regular file: rmqtorture reads only regular files", "p.yaml", namedPipe),
		flagCase("validate a named pipe", []string{"validate", "-f", "p.yaml"}, ExitUsage, "rmqtorture: p.yaml: a named pipe, not a regular file: rmqtorture reads only regular files", "p.yaml", namedPipe),
		flagCase("run scenario file a link to /dev/zero", []string{"run", "s", "-f", "z.yaml", "--out", "out"}, ExitUsage, "rmqtorture: z.yaml: a character device, not a regular file: rmqtorture reads only regular files", "z.yaml", linkTo+"/dev/zero"),
		flagCase("list a link to /dev/zero", []string{"list", "-f", "z.yaml"}, ExitUsage, "rmqtorture: z.yaml: a character device, not a regular file: rmqtorture reads only regular files", "z.yaml", linkTo+"/dev/zero"),
		flagCase("run scenario file a folder", []string{"run", "s", "-f", ".", "--out", "out"}, ExitUsage, "rmqtorture: .: a directory, not a regular file: rmqtorture reads only regular files"),
		flagCase("run unknown flag", run("--nosuch"), ExitUsage, "rmqtorture: unknown flag: --nosuch"),
		flagCase("run --messages 0", run("--messages", "0"), ExitUsage, "rmqtorture: --messages 0: scenario \"s\": load.messages: must be within 1–10000000, got 0"),
		flagCase("run --messages not a number", run("--messages", "abc"), ExitUsage, "rmqtorture: invalid argument \"abc\" for \"--messages\" flag: want a whole number"),
		flagCase("run --messages above the limit", run("--messages", "20000000"), ExitUsage, "rmqtorture: --messages 20000000: scenario \"s\": load.messages: must be within 1–10000000, got 20000000"),
		flagCase("run --window 0", run("--window", "0"), ExitUsage, "rmqtorture: --window 0: scenario \"s\": load.window: must be within 1–65535, got 0"),
		flagCase("run --mode unknown", run("--mode", "bogus"), ExitUsage, "rmqtorture: --mode bogus: scenario \"s\": load.modes[0]: \"bogus\" is not a mode (fire-and-forget, confirm-each, confirm-window, transactional)"),
		flagCase("run --mode twice", run("--mode", "confirm-each,confirm-each"), ExitUsage, "rmqtorture: --mode confirm-each,confirm-each: scenario \"s\": load.modes[1]: \"confirm-each\" listed twice"),
		flagCase("run --mode without a value", run("--mode"), ExitUsage, "rmqtorture: flag needs an argument: --mode"),
		flagCase("run --queue-types stream", run("--queue-types", "stream"), ExitUsage, "rmqtorture: --queue-types: \"stream\" is not a matrix queue type (quorum, classic); a stream scenario sets queue.type: stream"),
		flagCase("run --persistence maybe", run("--persistence", "maybe"), ExitUsage, "rmqtorture: --persistence: \"maybe\" is neither persistent nor transient"),
		flagCase("run --persistence mistyped", run("--persistence", "persistant"), ExitUsage, "rmqtorture: --persistence: \"persistant\" is neither persistent nor transient; did you mean persistent?"),
		flagCase("run --queue-types mistyped", run("--queue-types", "classic,quorun"), ExitUsage, "rmqtorture: --queue-types classic,quorun: scenario \"s\": matrix.queue_types[1]: \"quorun\" is not a queue type (quorum, classic); did you mean quorum?"),
		flagCase("run --repeat 0", run("--repeat", "0"), ExitUsage, "rmqtorture: --repeat must be within 1–100, got 0"),
		flagCase("run --repeat 101", run("--repeat", "101"), ExitUsage, "rmqtorture: --repeat 101: scenario \"s\": matrix.repeat: must be within 1–100, got 101"),
		flagCase("run --repeat negative", run("--repeat", "-1"), ExitUsage, "rmqtorture: --repeat -1: scenario \"s\": matrix.repeat: must be within 1–100, got -1"),
		flagCase("run --bucket 1ms", run("--bucket", "1ms"), ExitUsage, "rmqtorture: --bucket must be within 10ms–1m, got 1ms"),
		flagCase("run --bucket 2m", run("--bucket", "2m"), ExitUsage, "rmqtorture: --bucket must be within 10ms–1m, got 2m0s"),
		flagCase("run --bucket not a duration", run("--bucket", "wide"), ExitUsage, "rmqtorture: invalid argument \"wide\" for \"--bucket\" flag: want a duration with its unit, such as 500ms, 5s or 1m30s"),
		flagCase("run --port 0", run("--port", "0"), ExitUsage, "rmqtorture: --port must be within 1–65535, got 0"),
		flagCase("run --port 70000", run("--port", "70000"), ExitUsage, "rmqtorture: --port must be within 1–65535, got 70000"),
		flagCase("run --port taken", run("--port", "{busyport}"), ExitUsage, "rmqtorture: --port {busyport}: 127.0.0.1:{busyport} is already in use (listen tcp 127.0.0.1:{busyport}: bind: address already in use); pick a free port or leave --port out"),
		flagCase("run --broker-address a name", run("--broker-address", "localhost"), ExitUsage, "rmqtorture: --broker-address: \"localhost\" is not an IP address (Docker publishes ports on an IP address of the engine's host, e.g. 127.0.0.1 or 192.0.2.10)"),
		flagCase("run --broker-address 0.0.0.0", run("--broker-address", "0.0.0.0"), ExitUsage, "rmqtorture: --broker-address: \"0.0.0.0\" cannot be dialled: name the one address of the engine's host that clients reach it on, e.g. 127.0.0.1"),
		flagCase("run --broker-address with --uri", run("--uri", "amqp://alice:Pw0rdX@host/vh", "--broker-address", "192.0.2.10"), ExitUsage, "rmqtorture: --uri and --broker-address: --uri names a running broker that rmqtorture reaches over AMQP only, and --broker-address is for a broker container: give one"),
		flagCase("run --seed negative", run("--seed", "-1"), ExitUsage, "rmqtorture: invalid argument \"-1\" for \"--seed\" flag: want a whole number, 0 or more"),
		flagCase("run --keep=maybe", run("--keep=maybe"), ExitUsage, "rmqtorture: invalid argument \"maybe\" for \"--keep\" flag: want true or false"),
		flagCase("run --nodes 4", run("--nodes", "4"), ExitUsage, "rmqtorture: --nodes 4: scenario \"s\": broker.nodes: must be 1, 3 or 5, got 4: a quorum queue needs a majority of its members up, and 4 nodes lose it with 2 down, as 3 nodes do: the extra node adds no tolerance"),
		flagCase("run --nodes 0", run("--nodes", "0"), ExitUsage, "rmqtorture: --nodes must be 1, 3 or 5, got 0"),
		flagCase("run --nodes 7", run("--nodes", "7"), ExitUsage, "rmqtorture: --nodes 7: scenario \"s\": broker.nodes: must be 1, 3 or 5, got 7: a single broker, or a cluster of an odd size (a quorum queue keeps its majority with 1 of 3 or 2 of 5 nodes down)"),
		flagCase("run --nodes not a number", run("--nodes", "three"), ExitUsage, "rmqtorture: invalid argument \"three\" for \"--nodes\" flag: want a whole number"),
		flagCase("run --port with a cluster", []string{"run", "s", "-f", "c.yaml", "--out", "out", "--nodes", "3", "--port", "5999"}, ExitUsage, "rmqtorture: --port 5999: scenario \"s\" runs 3 nodes, each with its own AMQP port: --port names one broker's; leave it out for a cluster",
			"c.yaml", scenarioHead+"    queue: {type: classic}\n    load: {messages: 100}\n"),
		flagCase("run --nodes 1 with a cluster's target", []string{"run", "s", "-f", "c.yaml", "--out", "out", "--nodes", "1"}, ExitUsage, "rmqtorture: --nodes 1: scenario \"s\": faults[0].target: follower needs broker.nodes 3 or 5: on a single broker every step acts on the broker (leave target out, or write all)",
			"c.yaml", scenarioHead+"    broker: {nodes: 3}\n    load: {messages: 100}\n    faults: [{action: kill, after: 1s, target: follower}]\n"),
		flagCase("run --containers one name", run("--containers", "rmq1"), ExitUsage, "rmqtorture: --containers rmq1 names one container: the nodes of a cluster are 3 or 5; for a single broker use --container rmq1"),
		flagCase("run --containers two names", run("--containers", "rmq1,rmq2"), ExitUsage, "rmqtorture: --containers rmq1,rmq2: scenario \"s\": broker.nodes: must be 1, 3 or 5, got 2: a quorum queue needs a majority of its members up, and 2 nodes lose it with 1 down, as a single broker does: the extra node adds no tolerance"),
		flagCase("run --containers empty", run("--containers", ""), ExitUsage, "rmqtorture: --containers needs the names of the cluster's running containers, comma-separated (3 or 5)"),
		flagCase("run --containers an empty name", run("--containers", "rmq1,,rmq3"), ExitUsage, "rmqtorture: --containers: name 2 of \"rmq1,,rmq3\" is empty"),
		flagCase("run --containers a name twice", run("--containers", "rmq1,rmq2,rmq1"), ExitUsage, "rmqtorture: --containers: \"rmq1\" named twice: each node is its own container"),
		flagCase("run --containers and --container", run("--containers", "rmq1,rmq2,rmq3", "--container", "mybroker"), ExitUsage, "rmqtorture: --containers and --container both name the broker: give one (--container for a single broker, --containers for the nodes of a cluster)"),
		flagCase("run --containers and --nodes", run("--containers", "rmq1,rmq2,rmq3", "--nodes", "3"), ExitUsage, "rmqtorture: --containers sets the cluster's size, one node per container named: leave --nodes out"),
		flagCase("run --containers with broker.config", []string{"run", "s", "-f", "c.yaml", "--out", "out", "--containers", "rmq1,rmq2,rmq3"}, ExitUsage, "rmqtorture: --containers rmq1,rmq2,rmq3: scenario \"s\" sets broker.config or broker.advanced_config, which rmqtorture writes into a broker container it creates, before its first start; a container you name keeps its own configuration (run without --containers, or configure that broker yourself)",
			"c.yaml", scenarioHead+"    broker: {config: {consumer_timeout: '5000'}}\n    load: {messages: 100}\n"),
		flagCase("run --container with broker.filesystem lazy", []string{"run", "s", "-f", "p.yaml", "--out", "out", "--container", "mybroker"}, ExitUsage, "rmqtorture: --container mybroker: scenario \"s\": broker.filesystem: lazy puts the data directory of a broker container rmqtorture creates on a filesystem that forgets what was not synced; a container you name keeps its own data directory (run without --container)",
			"p.yaml", scenarioHead+"    broker: {filesystem: lazy}\n    load: {messages: 100}\n    faults: [{action: power-loss, published_percent: 50}]\n"),
		flagCase("run --containers with broker.filesystem lazy", []string{"run", "s", "-f", "p.yaml", "--out", "out", "--containers", "rmq1,rmq2,rmq3"}, ExitUsage, "rmqtorture: --containers rmq1,rmq2,rmq3: scenario \"s\": broker.filesystem: lazy puts the data directory of a broker container rmqtorture creates on a filesystem that forgets what was not synced; a container you name keeps its own data directory (run without --containers)",
			"p.yaml", scenarioHead+"    broker: {filesystem: lazy}\n    load: {messages: 100}\n    faults: [{action: power-loss, published_percent: 50}]\n"),
		flagCase("run --containers with a stream", []string{"run", "s", "-f", "st.yaml", "--out", "out", "--containers", "rmq1,rmq2,rmq3"}, ExitUsage, "rmqtorture: --containers: scenario \"s\" publishes to a stream over the stream protocol (queue.type: stream), whose clients go to the address each node advertises, and the nodes of a cluster you name advertise their own hostnames; rmqtorture runs a stream on a cluster it creates, where each node advertises its published port (run without --containers)",
			"st.yaml", scenarioHead+"    queue: {type: stream}\n    load: {messages: 100, modes: [confirm-window]}\n"),
		flagCase("run --uri with broker.filesystem lazy", []string{"run", "s", "-f", "p.yaml", "--out", "out", "--uri", "amqp://alice:Pw0rdX@host/vh"}, ExitUsage, "rmqtorture: --uri: scenario \"s\": broker.filesystem: lazy puts the data directory of a broker container rmqtorture creates on a filesystem that forgets what was not synced; the broker --uri names is not one (run without --uri)",
			"p.yaml", scenarioHead+"    broker: {filesystem: lazy}\n    load: {messages: 100}\n    faults: [{action: power-loss, published_percent: 50}]\n"),
		flagCase("run --keep with broker.filesystem lazy", []string{"run", "s", "-f", "p.yaml", "--out", "out", "--keep"}, ExitUsage, "rmqtorture: --keep: scenario \"s\": broker.filesystem: lazy puts the data directory of a broker container rmqtorture creates on a filesystem that forgets what was not synced, served by this rmqtorture process: the broker cannot outlive it (run without --keep)",
			"p.yaml", scenarioHead+"    broker: {filesystem: lazy}\n    load: {messages: 100}\n    faults: [{action: power-loss, published_percent: 50}]\n"),
		withEnv(flagCase("run on a remote engine with broker.filesystem lazy", []string{"run", "s", "-f", "p.yaml", "--out", "out"}, ExitUsage, "rmqtorture: scenario \"s\": broker.filesystem: lazy puts the data directory of a broker container rmqtorture creates on a filesystem that forgets what was not synced, mounted on this host; the Docker Engine at tcp://192.0.2.1:2375 cannot see it (run against the local engine's unix socket)",
			"p.yaml", scenarioHead+"    broker: {filesystem: lazy}\n    load: {messages: 100}\n    faults: [{action: power-loss, published_percent: 50}]\n"), "DOCKER_HOST", "tcp://192.0.2.1:2375"),
		flagCase("run --image empty", run("--image", ""), ExitUsage, "rmqtorture: --image \"\": scenario \"s\": broker.image: must name an image"),
		flagCase("run --out under a file", []string{"run", "s", "-f", "s.yaml", "--out", "afile/sub"}, ExitUsage, "rmqtorture: --out afile/sub: cannot write there: mkdir afile: not a directory", "afile", "x"),
		flagCase("run --out a file", []string{"run", "s", "-f", "s.yaml", "--out", "afile"}, ExitUsage, "rmqtorture: --out afile: cannot write there: mkdir afile: not a directory", "afile", "x"),
		flagCase("run --summary-file a folder", run("--summary-file", "adir"), ExitUsage, "rmqtorture: --summary-file adir: cannot append there: is a directory", "adir/keep", ""),
		flagCase("run --summary-file under a file", run("--summary-file", "afile/s.md"), ExitUsage, "rmqtorture: --summary-file afile/s.md: cannot append there: stat afile/s.md: not a directory", "afile", "x"),
		flagCase("run --metrics-file a folder", run("--metrics-file", "adir"), ExitUsage, "rmqtorture: --metrics-file adir: cannot append there: is a directory", "adir/keep", ""),
		withEnv(flagCase("run RMQTORTURE_MESSAGES not a number", run(), ExitUsage, `rmqtorture: RMQTORTURE_MESSAGES=abc: invalid argument "abc" for "--messages" flag: strconv.ParseInt: parsing "abc": invalid syntax (it sets --messages)`), "RMQTORTURE_MESSAGES", "abc"),
		withEnv(flagCase("run RMQTORTURE_MODE unknown", run(), ExitUsage, `rmqtorture: --mode fire-and-hope: scenario "s": load.modes[0]: "fire-and-hope" is not a mode (fire-and-forget, confirm-each, confirm-window, transactional)`), "RMQTORTURE_MODE", "fire-and-hope"),
		flagCase("run -q with PerfTest's prefetch", []string{"run", "-q", "100", "s", "-f", "s.yaml", "--out", "out"}, ExitUsage, `rmqtorture: -q is --quiet here, and "100" is no scenario: PerfTest's -q 100 (the consumers' basic.qos prefetch) is --prefetch 100`),
		flagCase("run -x 0 publishers", run("-x", "0"), ExitUsage, "rmqtorture: --publishers must be within 1–64, got 0"),
		flagCase("run --official-registry not a host", run("--official-registry", "no such/host"), ExitUsage, `rmqtorture: --official-registry "no such/host": not a registry host, e.g. 127.0.0.1:5000 or docker.io`),
		flagCase("run --junit a folder", run("--junit", "adir"), ExitUsage, "rmqtorture: --junit adir: cannot append there: is a directory", "adir/keep", ""),
		flagCase("run --junit in a missing folder", run("--junit", "nodir/junit.xml"), ExitUsage, "rmqtorture: --junit nodir/junit.xml: cannot append there: open nodir/junit.xml: no such file or directory"),
		flagCase("run --metrics-listen without a port", run("--metrics-listen", "127.0.0.1"), ExitUsage, `rmqtorture: --metrics-listen "127.0.0.1": want HOST:PORT, e.g. 127.0.0.1:9419`),
		flagCase("run --metrics-listen on a host not here", run("--metrics-listen", "192.0.2.1:9419"), ExitUsage, "rmqtorture: --metrics-listen 192.0.2.1:9419: listen tcp 192.0.2.1:9419: bind: cannot assign requested address"),
		flagCase("run --container with broker.config", []string{"run", "s", "-f", "c.yaml", "--out", "out", "--container", "mybroker"}, ExitUsage, "rmqtorture: --container mybroker: scenario \"s\" sets broker.config or broker.advanced_config, which rmqtorture writes into a broker container it creates, before its first start; a container you name keeps its own configuration (run without --container, or configure that broker yourself)",
			"c.yaml", scenarioHead+"    broker: {config: {consumer_timeout: '5000'}}\n    load: {messages: 100}\n"),
		flagCase("run --mode drops every confirm mode of republish", []string{"run", "s", "-f", "r.yaml", "--out", "out", "--mode", "fire-and-forget"}, ExitUsage, "rmqtorture: --mode fire-and-forget: scenario \"s\": load.on_confirm_timeout: republish acts on confirms, and load.modes has no confirm mode (confirm-each, confirm-window)",
			"r.yaml", scenarioHead+"    load: {messages: 100, modes: [confirm-each], on_confirm_timeout: republish}\n"),
		flagCase("run --queue-types quorum with a non-durable queue", []string{"run", "s", "-f", "d.yaml", "--out", "out", "--queue-types", "classic,quorum"}, ExitUsage, "rmqtorture: --queue-types classic,quorum: scenario \"s\": matrix.queue_types: quorum queues are always durable, and queue.durable is false",
			"d.yaml", scenarioHead+"    queue: {type: classic, durable: false}\n    load: {messages: 100}\n"),
		flagCase("run --messages below a count trigger", []string{"run", "s", "-f", "k.yaml", "--out", "out", "--messages", "10"}, ExitUsage, "rmqtorture: --messages 10: scenario \"s\": faults[0].published: must be within 0–10 (load.messages), got 50",
			"k.yaml", scenarioHead+"    load: {messages: 100}\n    faults: [{action: kill, published: 50}]\n"),
		// the settings flags (settingflags.go)
		flagCase("run --rate negative", run("--rate", "-5"), ExitUsage, "rmqtorture: --rate -5: scenario \"s\": load.rate: must be a finite number ≥ 0 (msg/s; 0: as fast as possible), got -5"),
		flagCase("run --rate not a number", run("--rate", "fast"), ExitUsage, "rmqtorture: invalid argument \"fast\" for \"-r, --rate\" flag: want a number"),
		flagCase("run --rate NaN", run("--rate", "NaN"), ExitUsage, "rmqtorture: --rate NaN: scenario \"s\": load.rate: must be a number, got \".nan\""),
		flagCase("run --duration without a rate", run("-z", "30s"), ExitUsage, "rmqtorture: --duration 30s: scenario \"s\" publishes as fast as it can, so a time gives no number of orders: add --rate N (msg/s, all publishers together), or size the burst with --messages"),
		flagCase("run --duration beside --messages", run("--rate", "100", "--duration", "10s", "--messages", "50"), ExitUsage, "rmqtorture: --duration and --messages both size the burst: give one (--duration publishes rate × duration orders)"),
		flagCase("run --duration 0s", run("--rate", "100", "--duration", "0s"), ExitUsage, "rmqtorture: --duration must be more than 0, got 0s"),
		flagCase("run --duration too short for one order", run("--rate", "1", "--duration", "100ms"), ExitUsage, "rmqtorture: --duration 100ms at 1 msg/s is 0 orders: a burst is 1–10000000 orders"),
		flagCase("run --duration not a duration", run("-r", "100", "-z", "30"), ExitUsage, "rmqtorture: invalid argument \"30\" for \"-z, --duration\" flag: want a duration with its unit, such as 500ms, 5s or 1m30s"),
		flagCase("run --duration below a count trigger", []string{"run", "s", "-f", "k.yaml", "--out", "out", "-r", "10", "-z", "1s"}, ExitUsage, "rmqtorture: --rate 10 --duration 1s: scenario \"s\": faults[0].published: must be within 0–10 (load.messages), got 50",
			"k.yaml", scenarioHead+"    load: {messages: 100}\n    faults: [{action: kill, published: 50}]\n"),
		flagCase("run --rate with load.burst", []string{"run", "s", "-f", "b.yaml", "--out", "out", "--rate", "100"}, ExitUsage, "rmqtorture: --rate 100: scenario \"s\": load.burst: load.burst and load.rate both schedule the publish calls: use one",
			"b.yaml", scenarioHead+"    load: {messages: 100, burst: {messages: 10, every: 1s}}\n"),
		flagCase("run --size above 1 MiB", run("--size", "2000000"), ExitUsage, "rmqtorture: --size 2000000: scenario \"s\": load.message_size_bytes: must be within 0–1048576 (1 MiB), got 2000000"),
		flagCase("run --size negative", run("--size", "-1"), ExitUsage, "rmqtorture: --size -1: scenario \"s\": load.message_size_bytes: must be within 0–1048576 (1 MiB), got -1"),
		flagCase("run --publishers 0", run("--publishers", "0"), ExitUsage, "rmqtorture: --publishers must be within 1–64, got 0"),
		flagCase("run --publishers 65", run("--publishers", "65"), ExitUsage, "rmqtorture: --publishers 65: scenario \"s\": load.publishers: must be within 1–64, got 65"),
		flagCase("run --consumers 65", run("--consumers", "65"), ExitUsage, "rmqtorture: --consumers 65: scenario \"s\": consumers.count: must be within 0–64, got 65"),
		flagCase("run --consumers negative", run("--consumers", "-1"), ExitUsage, "rmqtorture: --consumers -1: scenario \"s\": consumers.count: must be within 0–64, got -1"),
		flagCase("run --prefetch without consumers", run("--prefetch", "10"), ExitUsage, "rmqtorture: --prefetch 10: scenario \"s\" has no live consumers (consumers.count 0) for a prefetch to apply to: add --consumers N"),
		flagCase("run --prefetch 0", run("--consumers", "2", "--prefetch", "0"), ExitUsage, "rmqtorture: --prefetch must be within 1–65535, got 0"),
		flagCase("run --prefetch above 65535", run("--consumers", "2", "--prefetch", "70000"), ExitUsage, "rmqtorture: --prefetch 70000: scenario \"s\": consumers.prefetch: must be within 1–65535, got 70000"),
		flagCase("run --prefetch below ack_every", []string{"run", "s", "-f", "a.yaml", "--out", "out", "--prefetch", "5"}, ExitUsage, "rmqtorture: --prefetch 5: scenario \"s\": consumers.ack_every: must be within 1–5 (the prefetch: a consumer never holds more unacknowledged deliveries), got 10",
			"a.yaml", scenarioHead+"    load: {messages: 100}\n    consumers: {count: 1, ack_every: 10}\n"),
		flagCase("run --kill-at without a kill", run("--kill-at", "50%"), ExitUsage, "rmqtorture: --kill-at 50%: scenario \"s\" has no kill step to time (it has no fault steps)"),
		flagCase("run --kill-at with a pause only", []string{"run", "s", "-f", "p.yaml", "--out", "out", "--kill-at", "50%"}, ExitUsage, "rmqtorture: --kill-at 50%: scenario \"s\" has no kill step to time (its steps: pause at 1s after burst start, down 5s)",
			"p.yaml", scenarioHead+"    load: {messages: 100}\n    faults: [{action: pause, after: 1s}]\n"),
		flagCase("run --kill-at neither", []string{"run", "s", "-f", "k.yaml", "--out", "out", "--kill-at", "half"}, ExitUsage, "rmqtorture: --kill-at: \"half\" is neither a share of the burst (50%) nor a publish count (10000)",
			"k.yaml", scenarioHead+"    load: {messages: 100}\n    faults: [{action: kill, published: 50}]\n"),
		flagCase("run --kill-at a fraction of a count", []string{"run", "s", "-f", "k.yaml", "--out", "out", "--kill-at", "2.5"}, ExitUsage, "rmqtorture: --kill-at: \"2.5\" is neither a share of the burst (50%) nor a publish count (10000)",
			"k.yaml", scenarioHead+"    load: {messages: 100}\n    faults: [{action: kill, published: 50}]\n"),
		flagCase("run --kill-at 150%", []string{"run", "s", "-f", "k.yaml", "--out", "out", "--kill-at", "150%"}, ExitUsage, "rmqtorture: --kill-at 150%: scenario \"s\": faults[0].published_percent: must be within 0–100, got 150",
			"k.yaml", scenarioHead+"    load: {messages: 100}\n    faults: [{action: kill, published: 50}]\n"),
		flagCase("run --kill-at past load.messages", []string{"run", "s", "-f", "k.yaml", "--out", "out", "--kill-at", "500"}, ExitUsage, "rmqtorture: --kill-at 500: scenario \"s\": faults[1].published: must be within 0–100 (load.messages), got 500",
			"k.yaml", scenarioHead+"    load: {messages: 100}\n    faults: [{action: pause, after: 0s, down: 1s}, {action: kill, after: 5s}]\n"),
		flagCase("run --down without a down step", run("--down", "5s"), ExitUsage, "rmqtorture: --down 5s: scenario \"s\" has no step that takes the broker down and brings it back by itself (it has no fault steps)"),
		flagCase("run --down with manual recovery", []string{"run", "s", "-f", "m.yaml", "--out", "out", "--down", "5s"}, ExitUsage, "rmqtorture: --down 5s: scenario \"s\" has no step that takes the broker down and brings it back by itself (its steps: kill at 1s after burst start; start at 3s after burst start)",
			"m.yaml", scenarioHead+"    load: {messages: 100}\n    faults: [{action: kill, after: 1s, manual_recovery: true}, {action: start, after: 3s}]\n"),
		flagCase("run --down negative", []string{"run", "s", "-f", "k.yaml", "--out", "out", "--down", "-1s"}, ExitUsage, "rmqtorture: --down -1s: scenario \"s\": faults[0].down: must not be negative",
			"k.yaml", scenarioHead+"    load: {messages: 100}\n    faults: [{action: kill, published: 50}]\n"),
		flagCase("run --down above 10m", []string{"run", "s", "-f", "k.yaml", "--out", "out", "--down", "11m"}, ExitUsage, "rmqtorture: --down 11m0s: scenario \"s\": faults[0].down: must be at most 10m, got 11m0s",
			"k.yaml", scenarioHead+"    load: {messages: 100}\n    faults: [{action: kill, published: 50}]\n"),
		flagCase("run --down not a duration", run("--down", "5"), ExitUsage, "rmqtorture: invalid argument \"5\" for \"--down\" flag: want a duration with its unit, such as 500ms, 5s or 1m30s"),
		flagCase("run --queue-type stream", run("--queue-type", "stream"), ExitUsage, "rmqtorture: --queue-type: \"stream\" is neither quorum nor classic (a stream scenario sets queue.type: stream)"),
		flagCase("run --queue-type misspelt", run("--queue-type", "qourum"), ExitUsage, "rmqtorture: --queue-type: \"qourum\" is neither quorum nor classic (a stream scenario sets queue.type: stream); did you mean quorum?"),
		flagCase("run --queue-type lazy", run("--queue-type", "lazy"), ExitUsage, "rmqtorture: --queue-type: \"lazy\" is neither quorum nor classic (a stream scenario sets queue.type: stream)"),
		flagCase("run --queue-type and --queue-types", run("--queue-type", "classic", "--queue-types", "quorum,classic"), ExitUsage, "rmqtorture: --queue-type and --queue-types both set the queue type: give one (--queue-types runs every mode on each type it lists)"),
		flagCase("run --queue-type on a stream", []string{"run", "s", "-f", "st.yaml", "--out", "out", "--queue-type", "quorum"}, ExitUsage, "rmqtorture: --queue-type quorum: scenario \"s\" publishes to a stream over the stream protocol (queue.type: stream), which a flag does not turn into a queue",
			"st.yaml", scenarioHead+"    queue: {type: stream}\n    load: {messages: 100}\n"),
		flagCase("run --queue-type quorum with a non-durable queue", []string{"run", "s", "-f", "d.yaml", "--out", "out", "--queue-type", "quorum"}, ExitUsage, "rmqtorture: --queue-type quorum: scenario \"s\": queue.durable: quorum queues are always durable; use type: classic for a non-durable queue",
			"d.yaml", scenarioHead+"    queue: {type: classic, durable: false}\n    load: {messages: 100}\n"),
		// --images (images.go)
		flagCase("run --images with an empty name", run("--images", "rabbitmq:3,,rabbitmq:4"), ExitUsage, "rmqtorture: --images: image 2 of \"rabbitmq:3,,rabbitmq:4\" is empty"),
		flagCase("run --images empty", run("--images", ""), ExitUsage, "rmqtorture: --images needs the broker images to run on, comma-separated, e.g. --images rmqtorture/rabbitmq:4.0-trixie,rmqtorture/rabbitmq:4.3-forky"),
		flagCase("run --images twice the same", run("--images", "rabbitmq:4,rabbitmq:4"), ExitUsage, "rmqtorture: --images: \"rabbitmq:4\" named twice: each image runs once"),
		flagCase("run --images one image spelt twice", run("--images", "rabbitmq:4,docker.io/library/rabbitmq:4"), ExitUsage, "rmqtorture: --images: \"rabbitmq:4\" and \"docker.io/library/rabbitmq:4\" name the same image: each image runs once"),
		flagCase("run --images not an image reference", run("--images", "rabbitmq:4,Bad!"), ExitUsage, "rmqtorture: --images: \"Bad!\" is not an image reference: invalid reference format: repository name (library/Bad!) must be lowercase"),
		flagCase("run --image not an image reference", run("--image", "x@sha256:zz"), ExitUsage, "rmqtorture: --image: \"x@sha256:zz\" is not an image reference: invalid reference format"),
		flagCase("run --images and --image", run("--images", "rabbitmq:3,rabbitmq:4", "--image", "rabbitmq:4"), ExitUsage, "rmqtorture: --images and --image both name the broker's image: give one (--images runs every scenario on each image it lists)"),
		flagCase("run --images and --container", run("--images", "rabbitmq:3,rabbitmq:4", "--container", "b"), ExitUsage, "rmqtorture: --images and --container: --images runs every scenario on broker containers rmqtorture creates from each image, and --container names running ones: give one"),
		flagCase("run --images and --containers", run("--images", "rabbitmq:3,rabbitmq:4", "--containers", "a,b,c"), ExitUsage, "rmqtorture: --images and --containers: --images runs every scenario on broker containers rmqtorture creates from each image, and --containers names running ones: give one"),
		flagCase("run --images and --uri", run("--images", "rabbitmq:3,rabbitmq:4", "--uri", "amqp://alice:Pw0rdX@host/vh"), ExitUsage, "rmqtorture: --images and --uri: --uri names a running broker that rmqtorture reaches over AMQP only, and --images runs broker containers rmqtorture creates from each image: give one"),
		flagCase("run broker.images with --container", []string{"run", "s", "-f", "i.yaml", "--out", "out", "--container", "b"}, ExitUsage, "rmqtorture: --container b: scenario \"s\" runs on broker.images (rabbitmq:3, rabbitmq:4), broker containers rmqtorture creates from each image; --container names one running broker (run without --container, or with --image)",
			"i.yaml", scenarioHead+"    broker: {images: [rabbitmq:3, rabbitmq:4]}\n    load: {messages: 100}\n"),
		flagCase("run a group with --uri", []string{"run", "g", "-f", "g.yaml", "--out", "out", "--uri", "amqp://alice:Pw0rdX@host/vh"}, ExitUsage, "rmqtorture: --uri: scenario \"s\" runs on broker.images (rabbitmq:3, rabbitmq:4), broker containers rmqtorture creates from each image; --uri names one running broker (run without --uri)",
			"g.yaml", okScenario+"  - name: g\n    runs: [s]\n    broker: {images: [rabbitmq:3, rabbitmq:4]}\n"),
		flagCase("run a group mistyped", []string{"run", "upgrade-chek", "--out", "out"}, ExitUsage, "rmqtorture: scenarios.yaml: no scenario named \"upgrade-chek\"; did you mean upgrade-check?"),
		// command steps need --allow-commands; validate accepts them
		{name: "flags/run a command step without --allow-commands", args: run(), files: map[string]string{"s.yaml": scenarioHead + "    load: {messages: 100}\n    faults:\n      - action: command\n        published: 50\n        inject: [docker, kill, b]\n"}, code: ExitUsage, first: "rmqtorture: s.yaml:6: scenario \"s\": faults[0].action: command runs the programs the scenario names (docker kill b) with your rights; run them only with --allow-commands"},
		{name: "flags/run --uri with a kill beside a command step", args: run("--uri", "amqp://alice:Pw0rdX@host/vh", "--allow-commands"), files: map[string]string{"s.yaml": scenarioHead + "    load: {messages: 100}\n    faults: [{action: command, published: 20, inject: [x]}, {action: kill, published: 50}]\n"}, code: ExitUsage, first: "rmqtorture: --uri: scenario \"s\": faults[1] is a kill step, which acts on a broker container rmqtorture started or was named; with --uri only command steps run (make it a command step, or run without --uri)"},
		// --uri (uri.go): the password is in no message
		flagCase("run --uri empty", run("--uri", ""), ExitUsage, "rmqtorture: --uri needs a broker's AMQP URI (amqp:// or amqps://, with user, password, host, port and vhost)"),
		flagCase("run --uri http", run("--uri", "http://alice:Pw0rdX@host/vh"), ExitUsage, "rmqtorture: --uri: not an AMQP URI: the scheme is \"http\"; use amqp:// (or amqps:// for TLS)"),
		flagCase("run --uri without a host", run("--uri", "amqp:///vh"), ExitUsage, "rmqtorture: --uri: not an AMQP URI: it names no host"),
		flagCase("run --uri bad port", run("--uri", "amqp://alice:Pw0rdX@host:amqp/vh"), ExitUsage, "rmqtorture: --uri: not an AMQP URI: it does not parse as a URL (a password with a reserved character such as @, :, /, ? or # must be percent-encoded)"),
		flagCase("run --uri port out of range", run("--uri", "amqp://alice:Pw0rdX@host:70000/vh"), ExitUsage, "rmqtorture: --uri: not an AMQP URI: port 70000 is not within 1–65535"),
		flagCase("run --uri password with a bare #", run("--uri", "amqp://alice:Pw#0rdX@host/vh"), ExitUsage, "rmqtorture: --uri: not an AMQP URI: it does not parse as a URL (a password with a reserved character such as @, :, /, ? or # must be percent-encoded)"),
		flagCase("run --uri and --container", run("--uri", "amqp://alice:Pw0rdX@host/vh", "--container", "b"), ExitUsage, "rmqtorture: --uri and --container: --uri names a running broker that rmqtorture reaches over AMQP only, and --container is for a broker container: give one"),
		flagCase("run --uri and --containers", run("--uri", "amqp://alice:Pw0rdX@host/vh", "--containers", "a,b,c"), ExitUsage, "rmqtorture: --uri and --containers: --uri names a running broker that rmqtorture reaches over AMQP only, and --containers is for a broker container: give one"),
		flagCase("run --uri and --nodes", run("--uri", "amqp://alice:Pw0rdX@host/vh", "--nodes", "3"), ExitUsage, "rmqtorture: --uri and --nodes: --uri names a running broker that rmqtorture reaches over AMQP only, and --nodes is for a broker container: give one"),
		flagCase("run --uri and --image", run("--uri", "amqp://alice:Pw0rdX@host/vh", "--image", "rabbitmq:4"), ExitUsage, "rmqtorture: --uri and --image: --uri names a running broker that rmqtorture reaches over AMQP only, and --image is for a broker container: give one"),
		flagCase("run --uri and --port", run("--uri", "amqp://alice:Pw0rdX@host/vh", "--port", "5999"), ExitUsage, "rmqtorture: --uri and --port: --uri names a running broker that rmqtorture reaches over AMQP only, and --port is for a broker container: give one"),
		flagCase("run --uri and --kill-at", run("--uri", "amqp://alice:Pw0rdX@host/vh", "--kill-at", "50%"), ExitUsage, "rmqtorture: --kill-at: with --uri rmqtorture injects no fault (it did not start the broker): leave --kill-at out"),
		flagCase("run --uri and --down", run("--uri", "amqp://alice:Pw0rdX@host/vh", "--down", "5s"), ExitUsage, "rmqtorture: --down: with --uri rmqtorture injects no fault (it did not start the broker): leave --down out"),
		flagCase("run --uri with broker.config", []string{"run", "s", "-f", "c.yaml", "--out", "out", "--uri", "amqp://alice:Pw0rdX@host/vh"}, ExitUsage, "rmqtorture: --uri: scenario \"s\" sets broker.config or broker.advanced_config, which rmqtorture writes into a broker container it creates, before its first start; the broker --uri names keeps its own configuration (configure it yourself, or run without --uri)",
			"c.yaml", scenarioHead+"    broker: {config: {consumer_timeout: '5000'}}\n    load: {messages: 100}\n"),
		flagCase("run --uri with a cluster", []string{"run", "s", "-f", "c.yaml", "--out", "out", "--uri", "amqp://alice:Pw0rdX@host/vh"}, ExitUsage, "rmqtorture: --uri: scenario \"s\" runs a cluster of 3 nodes (broker.nodes), which rmqtorture forms from containers it creates and watches through rabbitmqctl; --uri names one broker (run without --uri)",
			"c.yaml", scenarioHead+"    broker: {nodes: 3}\n    queue: {type: classic}\n    load: {messages: 100}\n"),
		flagCase("run --uri with a stream", []string{"run", "s", "-f", "st.yaml", "--out", "out", "--uri", "amqp://alice:Pw0rdX@host/vh"}, ExitUsage, "rmqtorture: --uri: scenario \"s\" publishes to a stream over the stream protocol (queue.type: stream); with --uri rmqtorture speaks AMQP 0.9.1 only (run without --uri)",
			"st.yaml", scenarioHead+"    queue: {type: stream}\n    load: {messages: 100}\n"),
		// split runs (parts.go)
		flagCase("run --part without --load-only", run("--part", "1/2"), ExitUsage, "rmqtorture: --part is for a run split across processes: give it with --load-only or --drain-only"),
		flagCase("run --run-id without a part", run("--run-id", "r1"), ExitUsage, "rmqtorture: --run-id is for a run split across processes: give it with --load-only or --drain-only"),
		flagCase("run --load-only and --drain-only", run("--load-only", "--drain-only", "--uri", "amqp://alice:Pw0rdX@host/vh"), ExitUsage, "rmqtorture: --load-only and --drain-only: a process is one load part or the drain: give one"),
		flagCase("run --load-only without --part", run("--load-only", "--run-id", "r1", "--uri", "amqp://alice:Pw0rdX@host/vh"), ExitUsage, "rmqtorture: --load-only needs --part K/N: the share of every burst's ids this process publishes (e.g. --part 2/4)"),
		flagCase("run --load-only with --parts", run("--load-only", "--part", "1/2", "--parts", "2", "--run-id", "r1", "--uri", "amqp://alice:Pw0rdX@host/vh"), ExitUsage, "rmqtorture: --parts is the drain's (--drain-only); a load part gives --part K/N"),
		flagCase("run --drain-only without --parts", run("--drain-only", "--run-id", "r1", "--uri", "amqp://alice:Pw0rdX@host/vh"), ExitUsage, "rmqtorture: --drain-only needs --parts N: how many load parts published into the queues"),
		flagCase("run --drain-only with --part", run("--drain-only", "--parts", "2", "--part", "1/2", "--run-id", "r1", "--uri", "amqp://alice:Pw0rdX@host/vh"), ExitUsage, "rmqtorture: --part is a load part's (--load-only); the drain gives --parts N"),
		flagCase("run --load-only without --run-id", run("--load-only", "--part", "1/2", "--uri", "amqp://alice:Pw0rdX@host/vh"), ExitUsage, "rmqtorture: --load-only needs --run-id: the id every part of the run shares (queue names and message ids carry it), e.g. --run-id nightly-42"),
		flagCase("run --run-id with a dot", run("--drain-only", "--parts", "2", "--run-id", "r.1", "--uri", "amqp://alice:Pw0rdX@host/vh"), ExitUsage, "rmqtorture: --run-id \"r.1\": use 1–40 letters, digits, - or _ (queue names and message ids carry it)"),
		flagCase("run --load-only without --uri", run("--load-only", "--part", "1/2", "--run-id", "r1"), ExitUsage, "rmqtorture: --load-only needs --uri (or RMQTORTURE_URI): the broker every part and the drain reach, which you run"),
		flagCase("run --part not K/N", run("--load-only", "--part", "2", "--run-id", "r1", "--uri", "amqp://alice:Pw0rdX@host/vh"), ExitUsage, "rmqtorture: --part: \"2\" is not K/N, the part K of N parts (e.g. 2/4)"),
		flagCase("run --part K above N", run("--load-only", "--part", "5/4", "--run-id", "r1", "--uri", "amqp://alice:Pw0rdX@host/vh"), ExitUsage, "rmqtorture: --part: \"5/4\": K must be within 1–4 (N), got 5"),
		flagCase("run --part N above 1000", run("--load-only", "--part", "1/1001", "--run-id", "r1", "--uri", "amqp://alice:Pw0rdX@host/vh"), ExitUsage, "rmqtorture: --part: \"1/1001\": N must be within 1–1000, got 1001"),
		flagCase("run --parts 0", run("--drain-only", "--parts", "0", "--run-id", "r1", "--uri", "amqp://alice:Pw0rdX@host/vh"), ExitUsage, "rmqtorture: --parts must be within 1–1000, got 0"),
		flagCase("run --load-only with live consumers", run("--load-only", "--part", "1/2", "--run-id", "r1", "--uri", "amqp://alice:Pw0rdX@host/vh", "--consumers", "1"), ExitUsage, "rmqtorture: --part 1/2: scenario \"s\" has live consumers (consumers.count), which would take the parts' messages off the queue before the drain: a split run publishes, then drains"),
		flagCase("run --load-only more parts than messages", run("--load-only", "--part", "1/4", "--run-id", "r1", "--uri", "amqp://alice:Pw0rdX@host/vh", "--messages", "3"), ExitUsage, "rmqtorture: --part 1/4: scenario \"s\" publishes 3 orders per burst (load.messages), fewer than its 4 parts: every part needs at least one"),
		flagCase("run --load-only two scenarios", []string{"run", "s", "t", "-f", "two.yaml", "--out", "out", "--load-only", "--part", "1/2", "--run-id", "r1", "--uri", "amqp://alice:Pw0rdX@host/vh"}, ExitUsage, "rmqtorture: --load-only and --drain-only run one scenario (the run id names one run's queues), got 2",
			"two.yaml", okScenario+"  - name: t\n    load: {messages: 100}\n"),
		// validate, list
		flagCase("validate unknown scenario", []string{"validate", "nope", "-f", "s.yaml"}, ExitUsage, "rmqtorture: s.yaml: no scenario named \"nope\" (have: s)"),
		flagCase("validate unknown flag", []string{"validate", "-f", "s.yaml", "--strict"}, ExitUsage, "rmqtorture: unknown flag: --strict"),
		flagCase("validate missing file", []string{"validate", "-f", "nosuch.yaml"}, ExitUsage, "rmqtorture: read scenario file: open nosuch.yaml: no such file or directory"),
		// explore
		flagCase("explore without a scenario", []string{"explore", "-f", "s.yaml"}, ExitUsage, "rmqtorture: explore takes one scenario name, got 0"),
		flagCase("explore --trials 0", []string{"explore", "s", "-f", "s.yaml", "--trials", "0"}, ExitUsage, "rmqtorture: --trials 0: want at least 1"),
		flagCase("explore --steps one number", []string{"explore", "s", "-f", "s.yaml", "--steps", "1"}, ExitUsage, "rmqtorture: --steps: want MIN,MAX (two numbers), got 1"),
		flagCase("explore --steps out of range", []string{"explore", "s", "-f", "s.yaml", "--steps", "0,9"}, ExitUsage, "rmqtorture: scenario \"s\": the search space: steps 0–9: want 1 ≤ min ≤ max ≤ 5"),
		flagCase("explore --actions unknown", []string{"explore", "s", "-f", "s.yaml", "--actions", "kil"}, ExitUsage, "rmqtorture: --actions: \"kil\" is not a fault action; did you mean kill?"),
		flagCase("explore --rule-need above --rule-runs", []string{"explore", "s", "-f", "s.yaml", "--rule-need", "3", "--rule-runs", "2"}, ExitUsage, "rmqtorture: --rule-need 3 of --rule-runs 2: want 1 ≤ need ≤ runs"),
		flagCase("explore an unknown scenario", []string{"explore", "nosuch", "-f", "s.yaml"}, ExitUsage, "rmqtorture: s.yaml: no scenario named \"nosuch\" (have: s)"),
		flagCase("list with an argument", []string{"list", "-f", "s.yaml", "extra"}, ExitUsage, "rmqtorture: list takes no arguments, got \"extra\""),
		flagCase("list missing file", []string{"list", "-f", "nosuch.yaml"}, ExitUsage, "rmqtorture: read scenario file: open nosuch.yaml: no such file or directory"),
		flagCase("list bad file", []string{"list", "-f", "b.yaml"}, ExitUsage, "rmqtorture: b.yaml:2:12: scenarios: no scenarios", "b.yaml", "version: 1\nscenarios: []\n"),
		flagCase("list -o yaml", []string{"list", "-o", "yaml"}, ExitUsage, "rmqtorture: invalid argument \"yaml\" for \"-o, --output\" flag: unknown output format \"yaml\"; choose one of wide, json"),
		flagCase("list -o mistyped", []string{"list", "-o", "jsno"}, ExitUsage, "rmqtorture: invalid argument \"jsno\" for \"-o, --output\" flag: unknown output format \"jsno\"; did you mean json?"),
		flagCase("validate -o wide", []string{"validate", "-o", "wide"}, ExitUsage, "rmqtorture: invalid argument \"wide\" for \"-o, --output\" flag: unknown output format \"wide\"; choose one of json"),
		// mistypes: the built-in scenarios (no -f) and --mode
		flagCase("run mistyped scenario", []string{"run", "kill-mid-bust", "--out", "out"}, ExitUsage, "rmqtorture: scenarios.yaml: no scenario named \"kill-mid-bust\"; did you mean kill-mid-burst?"),
		flagCase("run scenario in capitals", []string{"run", "Baseline", "--out", "out"}, ExitUsage, "rmqtorture: scenarios.yaml: no scenario named \"Baseline\"; did you mean baseline?"),
		flagCase("validate mistyped scenario", []string{"validate", "kill-clasic"}, ExitUsage, "rmqtorture: scenarios.yaml: no scenario named \"kill-clasic\"; did you mean kill-classic?"),
		flagCase("run --mode mistyped", run("--mode", "confirm-eahc"), ExitUsage, "rmqtorture: --mode confirm-eahc: scenario \"s\": load.modes[0]: \"confirm-eahc\" is not a mode (fire-and-forget, confirm-each, confirm-window, transactional); did you mean confirm-each?"),
		// -f only where a scenario file is read
		flagCase("version -f", []string{"version", "-f", "s.yaml"}, ExitUsage, "rmqtorture: unknown shorthand flag: 'f' in -f: version reads no scenario file (-f is a flag of run, list and validate)"),
		flagCase("cleanup --file", []string{"cleanup", "--file", "s.yaml"}, ExitUsage, "rmqtorture: unknown flag: --file: cleanup reads no scenario file (-f is a flag of run, list and validate)"),
		// cleanup
		flagCase("cleanup --run and --all", []string{"cleanup", "--run", "ab12cd34", "--all"}, ExitUsage, "rmqtorture: --run and --all choose different scopes: give one"),
		flagCase("cleanup with an argument", []string{"cleanup", "ab12cd34"}, ExitUsage, "rmqtorture: cleanup takes no arguments, got \"ab12cd34\"; to remove one run's containers: rmqtorture cleanup --run ab12cd34"),
		flagCase("cleanup unknown flag", []string{"cleanup", "--yes"}, ExitUsage, "rmqtorture: unknown flag: --yes"),
		flagCase("--log-format yaml", []string{"run", "s", "-f", "s.yaml", "--log-format", "yaml"}, ExitUsage, `rmqtorture: --log-format "yaml": want human, text or json`),
		flagCase("cleanup --dry-run=maybe", []string{"cleanup", "--dry-run=maybe"}, ExitUsage, "rmqtorture: invalid argument \"maybe\" for \"--dry-run\" flag: want true or false"),
		flagCase("cleanup --run without a value", []string{"cleanup", "--run"}, ExitUsage, "rmqtorture: flag needs an argument: --run"),
	}
}

// resultCases are bad result files and run folders for report, compare and
// check, and bad flags of those commands.
func resultCases(t *testing.T, stored, other, checkRes, history, noHistory string) []badInput {
	r := "r.json"
	edit := func(f func(map[string]any)) string { return resultEdit(t, stored, f) }
	return []badInput{
		// report: the file
		resultCase("report without a file", []string{"report"}, ExitUsage, "rmqtorture: report takes one file, RESULT.json; got 0"),
		resultCase("report two files", []string{"report", r, r}, ExitUsage, "rmqtorture: report takes one file, RESULT.json; got 2", r, stored),
		resultCase("report missing file", []string{"report", "nosuch.json"}, ExitUsage, "rmqtorture: read result: open nosuch.json: no such file or directory"),
		resultCase("report a folder without result.json", []string{"report", "."}, ExitUsage, "rmqtorture: read result: open result.json: no such file or directory"),
		resultCase("report empty file", []string{"report", r}, ExitUsage, "rmqtorture: r.json: empty file, not a result.json", r, ""),
		resultCase("report not JSON", []string{"report", r}, ExitUsage, "rmqtorture: r.json: not JSON: line 1, column 1: invalid character 's' looking for beginning of value", r, "schema_version: 2\n"),
		resultCase("report truncated", []string{"report", r}, ExitUsage, "rmqtorture: r.json: not JSON: line 194, column 19: unexpected EOF", r, stored[:len(stored)/2]),
		resultCase("report trailing garbage", []string{"report", r}, ExitUsage, "rmqtorture: r.json: not JSON: invalid character after top-level value", r, stored+"x"),
		resultCase("report binary", []string{"report", r}, ExitUsage, "rmqtorture: r.json: not JSON: line 1, column 1: invalid character '\\x1f' looking for beginning of value", r, "\x1f\x8b\x08\x00\xff\xfe"),
		resultCase("report a JSON array", []string{"report", r}, ExitUsage, "rmqtorture: r.json: does not match the schema of schema_version 3 (reports/result.schema.json): /: got array, want object", r, "[]"),
		resultCase("report null", []string{"report", r}, ExitUsage, "rmqtorture: r.json: does not match the schema of schema_version 3 (reports/result.schema.json): /: got null, want object", r, "null"),
		resultCase("report empty object", []string{"report", r}, ExitUsage, "rmqtorture: r.json: does not match the schema of schema_version 3 (reports/result.schema.json): /: missing properties 'schema_version', 'tool', 'client', 'scenario', 'file', 'command', 'run_id', 'image', 'container', 'queue_type', 'topology', 'messages', 'seed', 'started_at', 'duration_ms', 'modes', 'verdict'", r, "{}"),
		resultCase("report schema_version 99", []string{"report", r}, ExitUsage, "rmqtorture: r.json: schema_version 99, this rmqtorture reads schema_version 1 to 3", r, edit(func(m map[string]any) { m["schema_version"] = 99 })),
		resultCase("report schema_version 0", []string{"report", r}, ExitUsage, "rmqtorture: r.json: schema_version 0, this rmqtorture reads schema_version 1 to 3", r, edit(func(m map[string]any) { m["schema_version"] = 0 })),
		resultCase("report schema_version a string", []string{"report", r}, ExitUsage, "rmqtorture: r.json: does not match the schema of schema_version 3 (reports/result.schema.json): /schema_version: value must be 3", r, edit(func(m map[string]any) { m["schema_version"] = "2" })),
		resultCase("report modes missing", []string{"report", r}, ExitUsage, "rmqtorture: r.json: does not match the schema of schema_version 3 (reports/result.schema.json): /: missing property 'modes'", r, edit(func(m map[string]any) { delete(m, "modes") })),
		resultCase("report sent negative", []string{"report", r}, ExitUsage, "rmqtorture: r.json: does not match the schema of schema_version 3 (reports/result.schema.json): /modes/0/sent: minimum: got -1, want 0", r, edit(func(m map[string]any) { mode0(m)["sent"] = -1 })),
		resultCase("report lost a string", []string{"report", r}, ExitUsage, "rmqtorture: r.json: does not match the schema of schema_version 3 (reports/result.schema.json): /modes/0/lost: got string, want integer", r, edit(func(m map[string]any) { mode0(m)["lost"] = "0" })),
		resultCase("report lost missing", []string{"report", r}, ExitUsage, "rmqtorture: r.json: does not match the schema of schema_version 3 (reports/result.schema.json): /modes/0: missing property 'lost'", r, edit(func(m map[string]any) { delete(mode0(m), "lost") })),
		resultCase("report unknown field", []string{"report", r}, ExitUsage, "rmqtorture: r.json: does not match the schema of schema_version 3 (reports/result.schema.json): /: additional properties 'score' not allowed", r, edit(func(m map[string]any) { m["score"] = 1 })),
		resultCase("report verdict unknown", []string{"report", r}, ExitUsage, "rmqtorture: r.json: does not match the schema of schema_version 3 (reports/result.schema.json): /verdict/status: value must be one of 'pass', 'fail', 'inconclusive'", r, edit(func(m map[string]any) { m["verdict"].(map[string]any)["status"] = "maybe" })),
		resultCase("report started_at not a time", []string{"report", r}, ExitUsage, "rmqtorture: r.json: does not match the schema of schema_version 3 (reports/result.schema.json): /started_at: 'yesterday' is not valid date-time: less than 20 characters long", r, edit(func(m map[string]any) { m["started_at"] = "yesterday" })),
		resultCase("report mode unknown", []string{"report", r}, ExitUsage, "rmqtorture: r.json: does not match the schema of schema_version 3 (reports/result.schema.json): /modes/0/mode: value must be one of 'fire-and-forget', 'confirm-each', 'confirm-window', 'transactional'", r, edit(func(m map[string]any) { mode0(m)["mode"] = "fire-and-hope" })),
		resultCase("report latency not an object", []string{"report", r}, ExitUsage, "rmqtorture: r.json: does not match the schema of schema_version 3 (reports/result.schema.json): /modes/0/confirm_latency_ms: got number, want object", r, edit(func(m map[string]any) { mode0(m)["confirm_latency_ms"] = 5 })),
		// report: files that would block or never end, or are too big
		resultCase("report a named pipe", []string{"report", "p.json"}, ExitUsage, "rmqtorture: p.json: a named pipe, not a regular file: rmqtorture reads only regular files", "p.json", namedPipe),
		resultCase("report a link to /dev/zero", []string{"report", "z.json"}, ExitUsage, "rmqtorture: z.json: a character device, not a regular file: rmqtorture reads only regular files", "z.json", linkTo+"/dev/zero"),
		resultCase("report a result over 16 MiB", []string{"report", r}, ExitUsage, "rmqtorture: r.json: 16777217 bytes, more than the 16777216 (16 MiB) a result.json may have; refusing to read it", r, strings.Repeat(" ", 16<<20+1)),
		resultCase("compare a named pipe", []string{"compare", r, "p.json"}, ExitUsage, "rmqtorture: p.json: a named pipe, not a regular file: rmqtorture reads only regular files", r, stored, "p.json", namedPipe),
		resultCase("compare a link to /dev/zero", []string{"compare", "z.json", r}, ExitUsage, "rmqtorture: z.json: a character device, not a regular file: rmqtorture reads only regular files", r, stored, "z.json", linkTo+"/dev/zero"),
		resultCase("compare --accept a named pipe", []string{"compare", r, r, "--accept", "p.yaml"}, ExitUsage, "rmqtorture: --accept p.yaml: a named pipe, not a regular file: rmqtorture reads only regular files", r, stored, "p.yaml", namedPipe),
		resultCase("report a versions report that is a named pipe", []string{"report", "v/versions.json"}, ExitUsage, "rmqtorture: v/versions.json: a named pipe, not a regular file: rmqtorture reads only regular files", "v/versions.json", namedPipe),
		resultCase("check a result.json that is a named pipe", []string{"check", "run"}, ExitUsage, "rmqtorture: run/result.json: a named pipe, not a regular file: rmqtorture reads only regular files", "run/result.json", namedPipe),
		resultCase("check a history that is a named pipe", []string{"check", "run"}, ExitUsage, "rmqtorture: run/history-0.bin.gz: a named pipe, not a regular file: rmqtorture reads only regular files", "run/result.json", checkRes, "run/history-0.bin.gz", namedPipe),
		// report: flags
		resultCase("report --format html", []string{"report", r, "--format", "html"}, ExitUsage, "rmqtorture: --format: \"html\" is not a format (markdown, table, json, summary)", r, stored),
		resultCase("report -o and --format disagree", []string{"report", r, "-o", "json", "--format", "table"}, ExitUsage, "rmqtorture: -o json and --format table disagree: give one", r, stored),
		resultCase("report --out under a file", []string{"report", r, "--out", "afile/sub"}, ExitUsage, "rmqtorture: --out afile/sub: cannot write there: mkdir afile: not a directory", r, stored, "afile", "x"),
		resultCase("report --out over the file read", []string{"report", "result.json", "--format", "json", "--out", "."}, ExitUsage, "rmqtorture: --out . would overwrite the result being read, result.json", "result.json", stored),
		resultCase("report --summary-file a folder", []string{"report", r, "--summary-file", "adir"}, ExitUsage, "rmqtorture: --summary-file adir: cannot append there: is a directory", r, stored, "adir/keep", ""),
		resultCase("report unknown flag", []string{"report", r, "--pretty"}, ExitUsage, "rmqtorture: unknown flag: --pretty", r, stored),
		// compare
		resultCase("compare -f", []string{"compare", r, r, "-f", "s.yaml"}, ExitUsage, "rmqtorture: unknown shorthand flag: 'f' in -f: compare reads no scenario file (-f is a flag of run, list and validate)", r, stored),
		resultCase("check --file", []string{"check", "run", "--file", "s.yaml"}, ExitUsage, "rmqtorture: unknown flag: --file: check reads no scenario file (-f is a flag of run, list and validate)"),
		resultCase("report -f", []string{"report", r, "-f", "s.yaml"}, ExitUsage, "rmqtorture: unknown shorthand flag: 'f' in -f: report reads no scenario file (-f is a flag of run, list and validate)", r, stored),
		resultCase("compare one file", []string{"compare", r}, ExitUsage, "rmqtorture: compare takes two files, BASELINE.json and RESULT.json; got 1", r, stored),
		resultCase("compare three files", []string{"compare", r, r, r}, ExitUsage, "rmqtorture: compare takes two files, BASELINE.json and RESULT.json; got 3 (r.json r.json r.json): to compare the newest run, pass $(ls -d DIR/SCENARIO-* | tail -1)", r, stored),
		resultCase("compare different scenarios", []string{"compare", r, "b.json"}, ExitUsage, "rmqtorture: b.json: scenario \"baseline\", but baseline r.json is of scenario \"kill-mid-burst\"", r, stored, "b.json", other),
		resultCase("compare a truncated result", []string{"compare", r, "b.json"}, ExitUsage, "rmqtorture: b.json: not JSON: line 5, column 25: unexpected EOF", r, stored, "b.json", stored[:100]),
		resultCase("compare a missing baseline", []string{"compare", "nosuch.json", r}, ExitUsage, "rmqtorture: read result: open nosuch.json: no such file or directory", r, stored),
		resultCase("compare --max-throughput-drop 150", []string{"compare", r, r, "--max-throughput-drop", "150"}, ExitUsage, "rmqtorture: max throughput drop must be 0–100 %, got 150", r, stored),
		resultCase("compare --max-p99-rise negative", []string{"compare", r, r, "--max-p99-rise", "-1"}, ExitUsage, "rmqtorture: max p99 rise must be ≥ 0 %, got -1", r, stored),
		resultCase("compare --max-recovery-ms negative", []string{"compare", r, r, "--max-recovery-ms", "-5"}, ExitUsage, "rmqtorture: max recovery must be ≥ 0 ms, got -5", r, stored),
		resultCase("compare --max-throughput-drop not a number", []string{"compare", r, r, "--max-throughput-drop", "abc"}, ExitUsage, "rmqtorture: invalid argument \"abc\" for \"--max-throughput-drop\" flag: want a number", r, stored),
		resultCase("compare --summary-file under a file", []string{"compare", r, r, "--summary-file", "afile/s.md"}, ExitUsage, "rmqtorture: --summary-file afile/s.md: cannot append there: stat afile/s.md: not a directory", r, stored, "afile", "x"),
		// compare across versions: --accept files, sides
		resultCase("compare --accept missing file", []string{"compare", r, r, "--accept", "nosuch.yaml"}, ExitUsage, "rmqtorture: --accept nosuch.yaml: no such file or directory", r, stored),
		resultCase("compare --accept a folder", []string{"compare", r, r, "--accept", "adir"}, ExitUsage, "rmqtorture: --accept adir: a directory, not a regular file: rmqtorture reads only regular files", r, stored, "adir/keep", ""),
		resultCase("compare --accept empty", []string{"compare", r, r, "--accept", "a.yaml"}, ExitUsage, "rmqtorture: a.yaml: empty: want \"accept:\" and a list of entries {scenario, mode, field, because}", r, stored, "a.yaml", ""),
		resultCase("compare --accept garbage after the document end", []string{"compare", r, r, "--accept", "a.yaml"}, ExitUsage, "rmqtorture: a.yaml:3: after the end of the document: did not find expected <document start>", r, stored, "a.yaml", "accept:\n  - {scenario: kill-mid-burst, field: lost, because: known}\n...\ngarbage: [\n"),
		resultCase("compare --accept YAML syntax", []string{"compare", r, r, "--accept", "a.yaml"}, ExitUsage, "rmqtorture: a.yaml:3: mapping values are not allowed in this context", r, stored, "a.yaml", "accept:\n  - scenario: x\n    field: a: b\n"),
		resultCase("compare --accept a list at the top", []string{"compare", r, r, "--accept", "a.yaml"}, ExitUsage, "rmqtorture: a.yaml:1: want a mapping with \"accept:\", got a list", r, stored, "a.yaml", "- scenario: kill-mid-burst\n"),
		resultCase("compare --accept entries not a list", []string{"compare", r, r, "--accept", "a.yaml"}, ExitUsage, "rmqtorture: a.yaml:2: accept: want a list of entries {scenario, mode, field, because}, got a mapping", r, stored, "a.yaml", "accept:\n  scenario: kill-mid-burst\n"),
		resultCase("compare --accept unknown key", []string{"compare", r, r, "--accept", "a.yaml"}, ExitUsage, "rmqtorture: a.yaml:5: accept[0].reason: unknown field (scenario, mode, field, because)", r, stored, "a.yaml", "accept:\n  - scenario: kill-mid-burst\n    field: lost\n    because: x\n    reason: y\n"),
		resultCase("compare --accept unknown field", []string{"compare", r, r, "--accept", "a.yaml"}, ExitUsage, "rmqtorture: a.yaml:3: accept[0].field: \"p99\" is not a field compare shows (present, verdict, lost, unconfirmed_missing, in_doubt, nacked, returned, duplicates, dead_lettered, deliveries_per_message, dead_letter_reason, x_death_count_at_park, pre_fault_publish_rate_msgs_per_s, confirm_rate_msgs_per_s, confirm_latency_ms.p99, client_recovery_ms)", r, stored, "a.yaml", "accept:\n  - scenario: kill-mid-burst\n    field: p99\n    because: x\n"),
		resultCase("compare --accept mistyped mode", []string{"compare", r, r, "--accept", "a.yaml"}, ExitUsage, "rmqtorture: a.yaml:3: accept[0].mode: \"confirm-windw\" is not a mode (fire-and-forget, confirm-each, confirm-window, transactional); did you mean confirm-window?", r, stored, "a.yaml", "accept:\n  - scenario: kill-mid-burst\n    mode: confirm-windw\n    field: lost\n    because: x\n"),
		resultCase("compare --accept without because", []string{"compare", r, r, "--accept", "a.yaml"}, ExitUsage, "rmqtorture: a.yaml:2: accept[0].because: missing: say why the difference is expected: release notes, an issue or a pull request", r, stored, "a.yaml", "accept:\n  - scenario: kill-mid-burst\n    field: lost\n"),
		resultCase("compare --accept the same entry twice", []string{"compare", r, r, "--accept", "a.yaml"}, ExitUsage, "rmqtorture: a.yaml:4: accept[1]: the same scenario, mode and field as accept[0] (line 2)", r, stored, "a.yaml", "accept:\n  - {scenario: kill-mid-burst, field: lost, because: x}\n\n  - {scenario: kill-mid-burst, field: lost, because: y}\n"),
		resultCase("compare -- without a candidate", []string{"compare", r, "--"}, ExitUsage, "rmqtorture: compare BASELINE... -- CANDIDATE...: give at least one result on each side of --; got 1 before it and 0 after", r, stored),
		resultCase("compare -- without a baseline", []string{"compare", "--", r, r}, ExitUsage, "rmqtorture: compare BASELINE... -- CANDIDATE...: give at least one result on each side of --; got 0 before it and 2 after", r, stored),
		resultCase("compare a side with a truncated run", []string{"compare", r, "side"}, ExitUsage, "rmqtorture: side/kill-mid-burst-2/result.json: not JSON: line 5, column 25: unexpected EOF", r, stored, "side/kill-mid-burst-1/result.json", stored, "side/kill-mid-burst-2/result.json", stored[:100]),
		resultCase("compare --strict=maybe", []string{"compare", r, r, "--strict=maybe"}, ExitUsage, "rmqtorture: invalid argument \"maybe\" for \"--strict\" flag: want true or false", r, stored),
		// check over the folders of a split run (checkparts.go)
		resultCase("check folders of two split runs", []string{"check", "a", "b"}, ExitUsage, "rmqtorture: b is of split run r2, a of split run r1: give the folders of one run", "a/result.json", splitPart(t, checkRes, "r1", 0), "b/result.json", splitPart(t, checkRes, "r2", 0)),
		resultCase("check a part given twice", []string{"check", "a", "b"}, ExitUsage, "rmqtorture: a and b are both part 1/2 of split run r1", "a/result.json", splitPart(t, checkRes, "r1", 1), "b/result.json", splitPart(t, checkRes, "r1", 1)),
		resultCase("check two drains", []string{"check", "a", "b"}, ExitUsage, "rmqtorture: a and b are both the drain of split run r1", "a/result.json", splitPart(t, checkRes, "r1", 0), "b/result.json", splitPart(t, checkRes, "r1", 0)),
		resultCase("check a whole run among parts", []string{"check", "a", "b"}, ExitUsage, "rmqtorture: b is a whole run, not a part of split run r1: check it on its own", "a/result.json", splitPart(t, checkRes, "r1", 0), "b/result.json", checkRes),
		// check
		resultCase("check without a folder", []string{"check"}, ExitUsage, "rmqtorture: check takes one or more run folders"),
		resultCase("check missing folder", []string{"check", "nosuch"}, ExitUsage, "rmqtorture: nosuch: no such run folder"),
		resultCase("check a folder without result.json", []string{"check", "run"}, ExitUsage, "rmqtorture: read result: open run/result.json: no such file or directory", "run/history-0.bin.gz", history),
		resultCase("check a result without history", []string{"check", "run"}, ExitUsage, "rmqtorture: run: confirm-window has no recorded history (modes[0].history): nothing to re-judge", "run/result.json", noHistory),
		resultCase("check a history that links out of the run folder", []string{"check", "run"}, ExitUsage, "rmqtorture: run/history-0.bin.gz: a link to ../elsewhere.bin.gz, out of the run folder: check reads only the run folder's own files", "run/result.json", checkRes, "elsewhere.bin.gz", history, "run/history-0.bin.gz", linkTo+"../elsewhere.bin.gz"),
		resultCase("check history file missing", []string{"check", "run"}, ExitUsage, "rmqtorture: read history: open run/history-0.bin.gz: no such file or directory", "run/result.json", checkRes),
		resultCase("check history truncated", []string{"check", "run"}, ExitUsage, "rmqtorture: run/history-0.bin.gz: history corrupt: truncated in the header after 0 records", "run/result.json", checkRes, "run/history-0.bin.gz", history[:len(history)/2]),
		resultCase("check history not gzip", []string{"check", "run"}, ExitUsage, "rmqtorture: run/history-0.bin.gz: history corrupt: not gzip: gzip: invalid header", "run/result.json", checkRes, "run/history-0.bin.gz", "not a history"),
		resultCase("check history empty", []string{"check", "run"}, ExitUsage, "rmqtorture: run/history-0.bin.gz: history corrupt: not gzip: EOF", "run/result.json", checkRes, "run/history-0.bin.gz", ""),
		resultCase("check a file, not a folder", []string{"check", "run/result.json"}, ExitUsage, "rmqtorture: run/result.json: not a folder; check takes a run folder, the one that holds result.json and its histories", "run/result.json", checkRes, "run/history-0.bin.gz", history),
		resultCase("check a history path out of the run folder", []string{"check", "run"}, ExitUsage, `rmqtorture: run: modes[0].history "../../../../etc/passwd": not a file name in the run folder`, "run/result.json", resultEdit(t, checkRes, func(r map[string]any) { mode0(r)["history"] = "../../../../etc/passwd" }), "run/history-0.bin.gz", history),
		resultCase("check an absolute history path", []string{"check", "run"}, ExitUsage, `rmqtorture: run: modes[0].history "/etc/passwd": not a file name in the run folder`, "run/result.json", resultEdit(t, checkRes, func(r map[string]any) { mode0(r)["history"] = "/etc/passwd" }), "run/history-0.bin.gz", history),
		resultCase("check a result with no mode", []string{"check", "run"}, ExitFail, "rmqtorture: run: result.json lists no mode: nothing to check (a history is re-judged against the mode that names it)", "run/result.json", resultEdit(t, checkRes, func(r map[string]any) { r["modes"] = []any{} }), "run/history-0.bin.gz", history, "run/history-1.bin.gz", history, "run/history-2.bin.gz", history),
		resultCase("report a key given twice", []string{"report", r}, ExitUsage, `rmqtorture: r.json: line 3, column 3: /: "schema_version" given twice in one object: keep one`, r, strings.Replace(stored, "{\n", "{\n  \"schema_version\": 3,\n", 1)),
		resultCase("report a key given twice in a mode", []string{"report", r}, ExitUsage, `rmqtorture: r.json: line 25, column 18: /modes/0: "lost" given twice in one object: keep one`, r, strings.Replace(stored, `"lost": `, `"lost": 7, "lost": `, 1)),
		resultCase("report a series bucket of 5e-324 ms", []string{"report", r}, ExitUsage, "rmqtorture: r.json: does not match the schema of schema_version 3 (reports/result.schema.json): /modes/0/series/bucket_ms: minimum: got 5×10⁻³²⁴, want 1", r, resultEdit(t, stored, func(r map[string]any) {
			mode0(r)["series"] = map[string]any{"bucket_ms": 5e-324, "published": []int{1}, "acked": []int{1}, "nacked": []int{0}, "returned": []int{0}, "delivered": []int{1}, "in_flight": []int{0}, "reconnects": []int{0}, "broker": []string{"up"}}
		})),
		resultCase("report a seed no integer holds", []string{"report", r}, ExitUsage, `rmqtorture: r.json: line 16, column 16: seed: number 1e400 is out of range: the field holds a uint64`, r, regexp.MustCompile(`"seed": -?[0-9]+`).ReplaceAllString(stored, `"seed": 1e400`)),
		resultCase("check a split run of 2^63 parts", []string{"check", "run"}, ExitUsage, "rmqtorture: run/result.json: does not match the schema of schema_version 3 (reports/result.schema.json): /load_part/parts: maximum: got 9.223372036854776×10¹⁸, want 1,000", "run/result.json", resultEdit(t, splitPart(t, checkRes, "r1", 0), func(r map[string]any) {
			r["load_part"].(map[string]any)["parts"] = 9223372036854775807
		}), "run/history-0.bin.gz", history),
		resultCase("check a history of another burst size", []string{"check", "run"}, ExitUsage, "rmqtorture: run/history-0.bin.gz: its header holds a burst of 8 ids, result.json says messages: 9999999", "run/result.json", resultEdit(t, checkRes, func(r map[string]any) { r["messages"] = 9999999 }), "run/history-0.bin.gz", history),
		resultCase("check a result of 2^30 messages", []string{"check", "run"}, ExitUsage, "rmqtorture: run/result.json: upgrade schema_version 2: does not match the schema of schema_version 3 (reports/result.schema.json): /messages: maximum: got 1.073741824×10⁰⁹, want 1×10⁰⁷", "run/result.json", resultEdit(t, checkRes, func(r map[string]any) { r["messages"] = 1 << 30 }), "run/history-0.bin.gz", history),
		resultCase("report --summary-file a named pipe", []string{"report", r, "--summary-file", "p.md"}, ExitUsage, "rmqtorture: --summary-file p.md: cannot append there: a named pipe with no reader (writing would wait for one for ever)", r, stored, "p.md", namedPipe),
		resultCase("check malformed result", []string{"check", "run"}, ExitUsage, "rmqtorture: run/result.json: not JSON: line 1, column 2: unexpected EOF", "run/result.json", "{", "run/history-0.bin.gz", history),
	}
}

// dockerCounter listens on 127.0.0.1 as DOCKER_HOST and counts the
// connections it is offered, closing each at once.
func dockerCounter(t *testing.T) *atomic.Int64 {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	var n atomic.Int64
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			c.Close()
		}
	}()
	t.Setenv("DOCKER_HOST", "tcp://"+l.Addr().String())
	return &n
}

// tree lists every path under dir (folders with a trailing slash), sorted.
func tree(t *testing.T, dir string) []string {
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			rel += "/"
		}
		out = append(out, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// Contents writeFiles makes into something other than a regular file: a
// named pipe (opening it for reading waits for a writer for ever), and a
// symbolic link to what follows linkTo (/dev/zero never ends).
const (
	namedPipe = "\x00named pipe"
	linkTo    = "\x00symbolic link to "
)

// writeFiles writes files (name → content) under dir and returns the tree
// they make.
func writeFiles(t *testing.T, dir string, files map[string]string) []string {
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		switch target, link := strings.CutPrefix(content, linkTo); {
		case content == namedPipe:
			err = syscall.Mkfifo(p, 0o644)
		case link:
			err = os.Symlink(target, p)
		default:
			err = os.WriteFile(p, []byte(content), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return tree(t, dir)
}

// TestBadInputs feeds every bad input through the command line and checks
// its exit code, its first line of stderr, an empty stdout, that no Docker
// Engine was contacted and that nothing was written.
func TestBadInputs(t *testing.T) {
	cases := badInputs(t)
	docker := dockerCounter(t)
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	busyPort := strconv.Itoa(busy.Addr().(*net.TCPAddr).Port)

	names := map[string]bool{}
	var table strings.Builder
	for _, tc := range cases {
		if names[tc.name] {
			t.Fatalf("case %q listed twice", tc.name)
		}
		names[tc.name] = true
		tc.first = strings.ReplaceAll(tc.first, "{busyport}", busyPort)
		args := slices.Clone(tc.args)
		for i, a := range args {
			args[i] = strings.ReplaceAll(a, "{busyport}", busyPort)
		}
		runs := [][]string{args}
		if tc.validate {
			runs = append(runs, []string{"validate", "-f", "s.yaml"})
		}
		for i, a := range runs {
			code, first := checkBadInput(t, tc, a, docker)
			if i == 0 {
				fmt.Fprintf(&table, "%d, %q\n", code, first)
			}
		}
	}
	if *printBadInputs {
		fmt.Print(table.String())
	}
	t.Logf("%d bad inputs refused (%d scenario files, each also through validate), each with its exact exit code and first line of stderr, nothing on stdout, no Docker contact, nothing written", len(cases), countPrefix(cases, "scenario/"))
	if len(cases) < 100 {
		t.Fatalf("%d bad inputs; the README promises at least 100", len(cases))
	}
}

// checkBadInput runs args in a fresh folder holding tc's files and checks
// what it must; it returns the exit code and first line of stderr.
func checkBadInput(t *testing.T, tc badInput, args []string, docker *atomic.Int64) (int, string) {
	t.Helper()
	dir := t.TempDir()
	before := writeFiles(t, dir, tc.files)
	t.Chdir(dir)
	for k, v := range tc.env {
		old, had := os.LookupEnv(k)
		os.Setenv(k, v)
		if had {
			defer os.Setenv(k, old)
		} else {
			defer os.Unsetenv(k)
		}
	}
	contacts := docker.Load()
	var stdout, stderr bytes.Buffer
	code := Execute(context.Background(), args, &stdout, &stderr)
	first, _, _ := strings.Cut(stderr.String(), "\n")
	where := fmt.Sprintf("%s: rmqtorture %s", tc.name, strings.Join(args, " "))
	if code != tc.code || first != tc.first {
		t.Errorf("%s:\n exit %d, first line of stderr\n  %q\n want exit %d,\n  %q", where, code, first, tc.code, tc.first)
	}
	if stdout.Len() > 0 {
		t.Errorf("%s: stdout %q, want nothing", where, stdout.String())
	}
	if n := docker.Load() - contacts; n != 0 {
		t.Errorf("%s: contacted the Docker Engine %d times", where, n)
	}
	if after := tree(t, dir); !slices.Equal(after, before) {
		t.Errorf("%s: wrote files: folder holds %q, had %q", where, after, before)
	}
	return code, first
}

func countPrefix(cases []badInput, prefix string) int {
	n := 0
	for _, c := range cases {
		if strings.HasPrefix(c.name, prefix) {
			n++
		}
	}
	return n
}

// TestReadmeBadInputCounts: the Reliability section of docs/reliability.md
// (moved there from README.md) quotes the table's counts as they are.
func TestReadmeBadInputCounts(t *testing.T) {
	cases := badInputs(t)
	// Line breaks fall anywhere in a paragraph.
	readme := strings.Join(strings.Fields(readFile(t, "../docs/reliability.md")), " ")
	for _, want := range []string{
		fmt.Sprintf("**Bad input starts nothing: %d inputs, each refused as documented.**", len(cases)),
		fmt.Sprintf("feeds the command line %d bad scenario files", countPrefix(cases, "scenario/")),
		fmt.Sprintf("%d bad command lines", countPrefix(cases, "flags/")),
		fmt.Sprintf("%d bad result files", countPrefix(cases, "results/")),
	} {
		if !strings.Contains(readme, want) {
			t.Errorf("docs/reliability.md lacks %q: update its Reliability section", want)
		}
	}
}

// allActions and downActions are the lists of actions validation messages
// give, in the action table's order: every action, and those that take
// down on a broker of nodes nodes. The cases build their messages from
// them, so that adding an action touches no case of another.
var allActions = strings.Join(actionNames(func(scenario.Action) bool { return true }), ", ")

// actionsOn lists the actions a broker of nodes nodes takes.
func actionsOn(nodes int) string {
	return strings.Join(actionNames(func(a scenario.Action) bool { return nodes > 1 || !a.ClusterOnly() }), ", ")
}

func downActions(nodes int) string {
	return strings.Join(actionNames(func(a scenario.Action) bool { return a.Takes(scenario.ParamDown) && (nodes > 1 || !a.ClusterOnly()) }), ", ")
}

func actionNames(keep func(scenario.Action) bool) []string {
	var out []string
	for _, a := range scenario.Actions {
		if keep(a) {
			out = append(out, string(a))
		}
	}
	return out
}
