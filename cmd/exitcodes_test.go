package cmd

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rmqtorture/rmqtorture/metrics"
)

// exitTrigger makes one command end with cause: run runs the command line
// (through cliErr) and returns its error and stderr, which must contain
// want.
type exitTrigger struct {
	cause Cause
	name  string
	run   func(t *testing.T) (err error, stderr string)
	want  string
}

// cliErr runs the command line as Execute does, under ctx and with stdout
// (a buffer when nil), and returns the command's error (which carries its
// cause) and stderr.
func cliErr(ctx context.Context, stdout io.Writer, args ...string) (error, string) {
	var errb bytes.Buffer
	if stdout == nil {
		stdout = &bytes.Buffer{}
	}
	root := NewRoot(stdout, &errb)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err != nil {
		errb.WriteString("rmqtorture: " + err.Error() + "\n")
	}
	return err, errb.String()
}

// args returns a trigger that runs args; an unreachable Docker shows that
// the cause is found before Docker is asked.
func args(a ...string) func(t *testing.T) (error, string) {
	return func(t *testing.T) (error, string) {
		t.Setenv("DOCKER_HOST", "tcp://127.0.0.1:1")
		return cliErr(context.Background(), nil, a...)
	}
}

// aFile is a regular file, where a folder is wanted.
func aFile(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "afile")
	if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// exitTriggers are the causes that need no Docker, each triggered through
// the command line (Docker-bound ones: dockerExitTriggers).
func exitTriggers(t *testing.T) []exitTrigger {
	notJSON := filepath.Join(t.TempDir(), "result.json")
	if err := os.WriteFile(notJSON, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	file := aFile(t)
	return []exitTrigger{
		{CausePass, "list", args("list", "-f", "../scenarios.yaml"), ""},
		{CausePass, "compare a result with itself", args("compare", baselineFile, baselineFile), ""},
		{CauseRegression, "compare a planted loss", func(t *testing.T) (error, string) {
			r := loadTestResult(t, baselineFile)
			r.Modes[2].Confirmed--
			r.Modes[2].Lost++
			return cliErr(context.Background(), nil, "compare", baselineFile, writeResult(t, r))
		}, "1 regression against baseline"},
		{CauseCheckMismatch, "check a history missing an ack", func(t *testing.T) (error, string) {
			dir := writeCheckRun(t)
			dropped := false
			editHistory(t, dir, func(r metrics.HistoryRecord) []metrics.HistoryRecord {
				if r.Kind == metrics.HAck && !dropped {
					dropped = true
					return nil
				}
				return []metrics.HistoryRecord{r}
			})
			return cliErr(context.Background(), nil, "check", dir)
		}, "1 of 1 modes differ from their history"},
		{CauseBadArgs, "unknown flag", args("run", "baseline", "--nosuch"), "unknown flag: --nosuch"},
		{CauseBadArgs, "bad flag value", args("run", "baseline", "-f", "../scenarios.yaml", "--messages", "0"), "--messages 0"},
		{CauseBadScenarioFile, "missing scenario file", args("validate", "-f", "nosuch.yaml"), "read scenario file"},
		{CauseUnknownScenario, "unknown scenario", args("run", "nope", "-f", "../scenarios.yaml"), `no scenario named "nope"`},
		{CauseBadResult, "report of a file that is not JSON", args("report", notJSON), notJSON + ": not JSON"},
		{CauseUnwritableOutput, "run --out under a file", args("run", "baseline", "-f", "../scenarios.yaml", "--out", file+"/sub"), "--out " + file + "/sub: cannot write there"},
		{CauseUnwritableOutput, "run --summary-file under a file", args("run", "baseline", "-f", "../scenarios.yaml", "--out", t.TempDir(), "--summary-file", file+"/s.md"), "--summary-file " + file + "/s.md: cannot append there"},
		{CauseUnwritableOutput, "report --out under a file", args("report", storedResult, "--out", file+"/sub"), "--out " + file + "/sub: cannot write there"},
		{CauseUnwritableOutput, "report --summary-file a folder", args("report", storedResult, "--summary-file", t.TempDir()), "--summary-file"},
		{CauseUnwritableOutput, "compare --summary-file under a file", args("compare", baselineFile, baselineFile, "--summary-file", file+"/s.md"), "--summary-file " + file + "/s.md: cannot append there"},
		{CausePortInUse, "run --port taken", func(t *testing.T) (error, string) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
			return args("run", "baseline", "-f", "../scenarios.yaml", "--out", t.TempDir(), "--port", port)(t)
		}, "is already in use"},
		{CauseDockerUnreachable, "run without Docker", args("run", "baseline", "-f", "../scenarios.yaml", "--out", t.TempDir()), "cannot reach the Docker Engine at tcp://127.0.0.1:1"},
		{CauseWriteFailed, "report to a stdout that fails", func(t *testing.T) (error, string) {
			return cliErr(context.Background(), &failAfter{n: 100}, "report", storedResult)
		}, errDiskFull.Error()},
		{CauseOperational, "cleanup without Docker", args("cleanup"), "cannot reach the Docker Engine"},
	}
}

func checkTrigger(t *testing.T, tr exitTrigger) {
	t.Helper()
	err, stderr := tr.run(t)
	if got := causeOf(err); got != tr.cause || ExitCode(err) != codeOf(tr.cause) {
		t.Fatalf("cause %q (exit %d), want %q (exit %d); stderr:\n%s", got, ExitCode(err), tr.cause, codeOf(tr.cause), stderr)
	}
	if !strings.Contains(stderr, tr.want) {
		t.Fatalf("stderr %q lacks %q", stderr, tr.want)
	}
}

// TestExitCauses triggers every cause that needs no Docker through the
// command line and checks the cause and exit code it ends with.
func TestExitCauses(t *testing.T) {
	for _, tr := range exitTriggers(t) {
		t.Run(string(tr.cause)+"/"+tr.name, func(t *testing.T) { checkTrigger(t, tr) })
	}
}

// TestEveryExitCauseHasATrigger: every row of the table is triggered by a
// test, here or against the real broker, and no cause is listed twice.
func TestEveryExitCauseHasATrigger(t *testing.T) {
	var triggered []Cause
	for _, tr := range append(exitTriggers(t), dockerExitTriggers...) {
		triggered = append(triggered, tr.cause)
	}
	seen := map[Cause]bool{}
	for _, e := range exitCauses {
		if seen[e.cause] {
			t.Errorf("cause %q listed twice", e.cause)
		}
		seen[e.cause] = true
		if !slices.Contains(triggered, e.cause) {
			t.Errorf("cause %q (exit %d) has no test triggering it", e.cause, e.code)
		}
	}
	for _, c := range triggered {
		if !seen[c] {
			t.Errorf("cause %q is triggered but not in exitCauses", c)
		}
	}
	// The docs' order: by code (130 last).
	if !slices.IsSortedFunc(exitCauses, func(a, b exitCause) int { return a.code - b.code }) {
		t.Error("exitCauses is not ordered by exit code")
	}
}

var exitCodesBlock = regexp.MustCompile(`(?s)(<!-- exit-codes( [a-z]+)?: [^\n]*-->\n)(.*?)(<!-- /exit-codes -->)`)

// TestReadmeExitCodes: the exit code tables of the docs (docs/commands.md:
// every cause; docs/ci.md: compare's; both moved there from README.md) are
// the ones exitCauses generates (-update rewrites them).
func TestReadmeExitCodes(t *testing.T) {
	found := 0
	for _, path := range []string{"../docs/commands.md", "../docs/ci.md"} {
		doc := readFile(t, path)
		blocks := exitCodesBlock.FindAllStringSubmatch(doc, -1)
		if len(blocks) == 0 {
			t.Errorf("%s: no generated exit code table", path)
		}
		found += len(blocks)
		got := exitCodesBlock.ReplaceAllStringFunc(doc, func(b string) string {
			m := exitCodesBlock.FindStringSubmatch(b)
			return m[1] + exitCodesMarkdown(strings.TrimSpace(m[2])) + m[4]
		})
		if got == doc {
			continue
		}
		if *update {
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		t.Errorf("%s: the exit code tables differ from cmd/exitcodes.go (go test ./cmd -run TestReadmeExitCodes -update rewrites them)", path)
	}
	if found < 2 {
		t.Fatalf("want the exit code table and compare's, found %d generated blocks", found)
	}
}

// TestWorseRanksCauses: with several scenarios, fail > error > interrupted
// > inconclusive > pass, as docs/commands.md says.
func TestWorseRanksCauses(t *testing.T) {
	order := []Cause{CausePass, CauseInconclusive, CauseInterrupted, CauseImageMissing, CauseVerdictFail}
	for i, a := range order {
		for j, b := range order {
			want := a
			if j > i {
				want = b
			}
			if got := worse(a, b); got != want {
				t.Errorf("worse(%s, %s) = %s, want %s", a, b, got, want)
			}
		}
	}
	if worse(CauseBrokerNotReady, CauseInconclusive) != CauseBrokerNotReady {
		t.Error("a tie keeps the first cause")
	}
}
