package docker

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// logSignature is a RabbitMQ log line the field has tied to lost or damaged
// messages.
type logSignature struct {
	name    string
	meaning string
	re      *regexp.Regexp
	// counts: every number the submatches hold is a count of messages the
	// line says the broker dropped.
	counts bool
}

// logSignatures is the scanner's table, in report order. To add one, append
// {name, meaning citing the public report, pattern, counts} and a line of
// a real log to TestScanBrokerLog.
var logSignatures = []logSignature{
	{
		name:    "restarting-crashed-queue",
		meaning: "a classic queue's process crashed and was restarted from its files; messages it held may be gone (rabbitmq-server#13390, #12367)",
		re:      regexp.MustCompile(`Restarting crashed queue`),
	},
	{
		// RabbitMQ 4.x prints three persistent counts ("dropped 0/1/0
		// persistent messages"), 3.x one.
		name:    "dropped-after-unclean-shutdown",
		meaning: "a durable classic queue recovered after an unclean shutdown (kill, crash) and says how many persistent and transient messages it dropped from its index (rabbitmq-server#13390)",
		re:      regexp.MustCompile(`dropped ([0-9/]+) persistent messages and ([0-9]+) transient messages`),
		counts:  true,
	},
	{
		name:    "discarding-message",
		meaning: "the broker discarded a message addressed to a process that no longer exists, e.g. one of the node before its restart (rabbitmq-server#13390)",
		re:      regexp.MustCompile(`Discarding message`),
	},
	{
		name:    "process-crashed",
		meaning: "an Erlang process of the broker (a queue, a channel) crashed; its crash report follows in the log",
		re:      regexp.MustCompile(`\*\* Generic server .* terminating`),
	},
	{
		name:    "partitioned-metadata-store",
		meaning: "the node's metadata store (Mnesia) saw a peer it had lost contact with come back: a network partition, which RabbitMQ's default partition handling (ignore) keeps until a node restarts, even after a blip of milliseconds (https://www.rabbitmq.com/docs/partitions, rabbitmq-server#17319)",
		re:      regexp.MustCompile(`inconsistent_database, running_partitioned_network`),
	},
	{
		name:    "partial-partition",
		meaning: "a node saw a peer go down that another node still saw, and disconnected from that node too, turning a partial partition into a whole one (https://www.rabbitmq.com/docs/partitions, rabbitmq-server PR #9663)",
		re:      regexp.MustCompile(`Partial partition detected`),
	},
}

// ansiEscape matches a terminal escape sequence (CSI), such as the colour
// codes RabbitMQ's console log puts around warnings and errors.
var ansiEscape = regexp.MustCompile("\x1b\\[[0-9;?]*[ -/]*[@-~]")

// maxFindingLine bounds the first line a finding keeps, in bytes.
const maxFindingLine = 500

// maxLogLine bounds one log line the scanner reads, in bytes.
const maxLogLine = 1 << 20

// ScanBrokerLog reads a RabbitMQ log line by line and returns the known
// signatures it holds (logSignatures), in table order: how many lines
// matched, the first of them with terminal colour codes stripped, and for
// the signatures that carry counts, the messages the lines say were
// dropped. On a read error it returns what it found so far and the error.
func ScanBrokerLog(r io.Reader) ([]scenario.BrokerLogFinding, error) {
	found := make([]*scenario.BrokerLogFinding, len(logSignatures))
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLogLine)
	for sc.Scan() {
		line := ansiEscape.ReplaceAllString(sc.Text(), "")
		for i, sig := range logSignatures {
			m := sig.re.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			f := found[i]
			if f == nil {
				f = &scenario.BrokerLogFinding{Signature: sig.name, Meaning: sig.meaning, FirstLine: clip(strings.TrimSpace(line), maxFindingLine)}
				found[i] = f
			}
			f.Count++
			if sig.counts {
				f.Messages += sumCounts(m[1:])
			}
		}
	}
	var out []scenario.BrokerLogFinding
	for _, f := range found {
		if f != nil {
			out = append(out, *f)
		}
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("read the broker log: %w", err)
	}
	return out, nil
}

// sumCounts adds every number in groups ("0/1/0", "2").
func sumCounts(groups []string) int {
	n := 0
	for _, g := range groups {
		for _, part := range strings.Split(g, "/") {
			v, _ := strconv.Atoi(part)
			n += v
		}
	}
	return n
}

// clip shortens s to at most n bytes, on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// ScanLog scans the container's log (stdout and stderr, since since; the
// zero time: all of it) for known loss signatures (ScanBrokerLog), through
// the Docker logs API: the container may be removed before anyone reads
// `docker logs`.
func (c *Container) ScanLog(ctx context.Context, since time.Time) ([]scenario.BrokerLogFinding, error) {
	opts := container.LogsOptions{ShowStdout: true, ShowStderr: true}
	if !since.IsZero() {
		opts.Since = since.UTC().Format(time.RFC3339Nano)
	}
	rc, err := c.cli.ContainerLogs(ctx, c.ID, opts)
	if err != nil {
		return nil, fmt.Errorf("read the logs of container %q: %w", c.Name, err)
	}
	defer rc.Close()
	if c.tty { // a terminal's log is one raw stream, not multiplexed
		return ScanBrokerLog(rc)
	}
	pr, pw := io.Pipe()
	go func() {
		_, err := stdcopy.StdCopy(pw, pw, rc)
		pw.CloseWithError(err)
	}()
	defer pr.Close() // unblocks the copy if the scanner stops early
	return ScanBrokerLog(pr)
}
