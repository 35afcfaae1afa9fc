package reports

import (
	"bytes"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

var update = flag.Bool("update", false, "rewrite golden files")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		for i := range min(len(g), len(w)) {
			if g[i] != w[i] {
				t.Fatalf("%s differs at line %d:\n got: %s\nwant: %s\n(run go test ./reports -update and review the diff)", path, i+1, g[i], w[i])
			}
		}
		t.Fatalf("%s differs in length: %d lines, want %d (run go test ./reports -update and review the diff)", path, len(g), len(w))
	}
}

func render(t *testing.T, f func(io.Writer, *scenario.Result) error, r *scenario.Result) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := f(&buf, r); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func realFixture(t *testing.T) (*scenario.Result, []byte) {
	t.Helper()
	data, err := os.ReadFile(realResult)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	return r, data
}

// TestGolden pins the terminal table, the markdown report and the JSON of
// fixed results, byte for byte: the real kill-mid-burst result and
// constructed ones that reach what it does not (a failed verdict, more id
// ranges than listed, a fault error, escaping, a matrix, deadlines).
func TestGolden(t *testing.T) {
	real, _ := realFixture(t)
	for name, r := range map[string]*scenario.Result{
		"kill-mid-burst": real,
		"full":           fullResult(),
		"matrix":         matrixResult(),
		"deadline":       deadlineResult(),
		"tx":             txResult(),
		"deadletter":     deadLetterResult(),
	} {
		t.Run(name, func(t *testing.T) {
			golden(t, name+".table.golden", render(t, Table, r))
			golden(t, name+".md.golden", render(t, Markdown, r))
			if name != "kill-mid-burst" { // its JSON is the stored result itself: TestJSONRoundTrip
				golden(t, name+".json.golden", render(t, JSON, r))
			}
		})
	}
}

// TestJSONRoundTrip: decoding the real result.json and writing it again
// gives the same bytes, so `rmqtorture report --format json` reproduces a
// stored result exactly.
func TestJSONRoundTrip(t *testing.T) {
	r, data := realFixture(t)
	if got := render(t, JSON, r); !bytes.Equal(got, data) {
		golden(t, "kill-mid-burst.result.json", got) // reports the first differing line
	}
}

func TestIDListSummarisesBeyondMaxRanges(t *testing.T) {
	var buf bytes.Buffer
	idList(&buf, "Lost", everyOther(maxRanges+3))
	want := "\nLost: 53 ids (sequence numbers): 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 32, 34, 36, 38, 40, 42, 44, 46, 48, 50, 52, 54, 56, 58, 60, 62, 64, 66, 68, 70, 72, 74, 76, 78, 80, 82, 84, 86, 88, 90, 92, 94, 96, 98 … and 3 more ids\n"
	if buf.String() != want {
		t.Fatalf("got  %q\nwant %q", buf.String(), want)
	}
}

func TestFormatters(t *testing.T) {
	for _, tc := range []struct {
		got, want string
	}{
		{ms(0), "0.0"}, {ms(-0.01), "0.0"}, {ms(1.634), "1.6"}, {ms(99.94), "99.9"}, {ms(99.96), "100"},
		{ms(733.4), "733"}, {ms(27400.5), "27,401"}, {ms(-1500), "-1,500"},
		{rate(5801.5), "5,802"}, {num(1234567), "1,234,567"}, {num(-999), "-999"},
		{cell("a|b\nc"), `a\|b c`},
		{code("x"), "`x`"}, {code("a`b"), "``a`b``"}, {code("`a"), "`` `a ``"}, {code(""), "(none)"},
		{fence("run ```x```"), "````\nrun ```x```\n````"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

// A warning (an expectation --mode left unchecked) is shown in the table and
// in report.md, after the verdict, and survives a JSON round trip.
func TestWarningsRendered(t *testing.T) {
	const w = `expect.modes.confirm-window of scenario "x" is not checked: --mode runs only confirm-each`
	r := &scenario.Result{SchemaVersion: scenario.SchemaVersion, Scenario: "x", Verdict: scenario.Verdict{Status: scenario.Pass}, Warnings: []string{w}}
	var tbl, md, js bytes.Buffer
	if err := Table(&tbl, r); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(tbl.String(), "verdict: PASS\nwarning: "+w+"\n") {
		t.Errorf("table ends %q", tbl.String())
	}
	if err := Markdown(&md, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "No expectation failed.\n\nWarning: "+w+"\n") {
		t.Errorf("report.md lacks the warning:\n%s", md.String())
	}
	if err := JSON(&js, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(js.String(), `"warnings": [`) {
		t.Errorf("result.json lacks warnings:\n%s", js.String())
	}
}

// kill, stop and restart take effect during their call: the report times
// them from the call's start and gives the call's length; a fault whose
// effect waits for its call to return keeps "took effect N ms later".
func TestFaultTimingWording(t *testing.T) {
	r := &scenario.Result{SchemaVersion: scenario.SchemaVersion, Scenario: "x", Verdict: scenario.Verdict{Status: scenario.Pass},
		Modes: []scenario.ModeResult{{Mode: scenario.ConfirmEach, Verdict: scenario.Verdict{Status: scenario.Pass}, Faults: []scenario.FaultRecord{
			{Action: scenario.Kill, Signal: "SIGKILL", Trigger: "50% published", AtMS: 275, AtPublished: 2000, CallMS: 343, PublishedAtInject: 2000},
			{Action: scenario.MemoryAlarm, Trigger: "10% published", AtMS: 100, AtPublished: 10, InjectMS: 1904, PublishedAtInject: 90},
		}}}}
	var md bytes.Buffer
	if err := Markdown(&md, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Fault: kill SIGKILL. Its trigger (50% published) fired at 275 ms with 2,000 published; the fault took effect during its call (timed from the call's start, which took 343 ms) with 2,000 published",
		"Fault: memory-alarm. Its trigger (10% published) fired at 100 ms with 10 published; the fault took effect 1,904 ms later with 90 published",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("report.md lacks %q:\n%s", want, md.String())
		}
	}
}

// A command step's commands are in report.md: what ran, how it ended, and
// its output as indented blocks (a cut one says how much was dropped).
func TestCommandStepRendered(t *testing.T) {
	r := &scenario.Result{SchemaVersion: scenario.SchemaVersion, Scenario: "x", Verdict: scenario.Verdict{Status: scenario.Pass},
		Modes: []scenario.ModeResult{{Mode: scenario.ConfirmEach, Verdict: scenario.Verdict{Status: scenario.Pass}, Faults: []scenario.FaultRecord{
			{Action: scenario.Command, Trigger: "50% published", AtMS: 275, AtPublished: 2000, CallMS: 120.5, PublishedAtInject: 2000, DownMS: 2000, Commands: []scenario.CommandRun{
				{Step: "inject", Argv: []string{"sh", "-c", "docker kill `x`"}, ExitCode: 0, DurationMS: 120.5, Stdout: "rmqt-1\n"},
				{Step: "recover", Argv: []string{"docker", "start", "rmqt-1"}, ExitCode: 1, DurationMS: 30, Stderr: "a\nb\n", StderrCutBytes: 4000, Error: "exit status 1"},
			}},
		}}}}
	var md bytes.Buffer
	if err := Markdown(&md, r); err != nil {
		t.Fatal(err)
	}
	want := "\nCommand (inject): `sh -c 'docker kill 'x''`: exited 0 after 121 ms.\n\nstdout:\n\n    rmqt-1\n" +
		"\nCommand (recover): `docker start rmqt-1`: exit status 1 after 30.0 ms.\n\nstderr (its last 4 bytes; 4,000 dropped before):\n\n    a\n    b\n"
	if !strings.Contains(md.String(), want) {
		t.Errorf("report.md lacks %q:\n%s", want, md.String())
	}
}

// Every duplicated id is explained by its cause: republished after a
// confirm timeout (with the late confirms), republished after going in
// doubt, or never republished.
func TestDuplicatesNote(t *testing.T) {
	m := scenario.ModeResult{Mode: scenario.ConfirmWindow}
	m.Duplicates, m.LateConfirms = 7, 2
	m.IDs.Duplicated = []metrics.Range{{First: 1, Last: 2}, {First: 10, Last: 12}, {First: 20, Last: 20}}
	m.IDs.Republished = []metrics.Range{{First: 1, Last: 2}, {First: 10, Last: 12}}
	m.IDs.WentInDoubt = []metrics.Range{{First: 10, Last: 15}}
	var b bytes.Buffer
	duplicatesNote(&b, m)
	want := "\nDuplicates: 6 ids delivered more than once (7 extra copies):\n" +
		"- 2 republished without going in doubt (a confirm timeout under `load.on_confirm_timeout: republish`, or a `basic.nack` republished): the broker had stored the first copy too; 2 late confirms of an earlier copy came after the copy was sent, matched to their ids by delivery tag.\n" +
		"- 3 republished after going in doubt when the connection was lost: the broker had stored the original although it never acked it.\n" +
		"- 1 never republished: the broker delivered one message more than once.\n"
	if b.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", b.String(), want)
	}
}
