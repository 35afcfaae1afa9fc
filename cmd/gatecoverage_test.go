package cmd

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// gatePaths are the ways a broker is provisioned and the outputs a run
// writes: each needs a row in docs/testing.md's gate table, as every
// action and every ledger class do.
var gatePaths = map[string][]string{
	"path":   {"single node", "cluster", "--container", "--containers", "--uri", "remote engine", "Podman", "image pull", "--images", "stream queue", "transactional"},
	"output": {"report", "JSON", "check", "compare", "cleanup", "interrupt"},
}

// TestGateCoverage holds the coverage docs against the code: every fault
// action of the action table has a "Gate test:" line in its section of
// docs/faults.md, every ledger class and every provisioning path and
// output a row in docs/testing.md's table; every test they name exists and
// is in the gate tier of scripts/test-weights.txt.
func TestGateCoverage(t *testing.T) {
	rows := gateRows(t)
	for a, test := range actionGateTests(t) {
		rows["action|"+a] = test
	}
	tiers := weightTiers(t)
	tests := testFuncs(t)
	want := map[string][]string{"class": append(append([]string{}, metrics.PartitionClasses...), metrics.CrossClasses...)}
	for _, a := range scenario.Actions {
		want["action"] = append(want["action"], string(a))
	}
	for k, v := range gatePaths {
		want[k] = v
	}
	for kind, names := range want {
		for _, n := range names {
			if rows[kind+"|"+n] == "" {
				if kind == "action" {
					t.Errorf("docs/faults.md: action %q has no line \"- **Gate test:** `TestX`: what it proves.\" in its section", n)
				} else {
					t.Errorf("docs/testing.md: %s %q has no row in the gate table (kind | name | gate test | what it proves)", kind, n)
				}
			}
		}
	}
	for key, test := range rows {
		if !tests[test] {
			t.Errorf("docs: %q names %s, which is no test function", key, test)
		} else if tiers[test] != "gate" {
			t.Errorf("docs: %q names %s, whose tier in scripts/test-weights.txt is %q, not gate", key, test, tiers[test])
		}
	}
}

// gateRows reads the table rows "| kind | name | test | … |" of
// docs/testing.md into "kind|name" → test.
func gateRows(t *testing.T) map[string]string {
	t.Helper()
	data, err := os.ReadFile("../docs/testing.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	row := regexp.MustCompile(`^\| (action|class|path|output) \| ([^|]+?) \| (Test\w+) \|`)
	for _, line := range strings.Split(string(data), "\n") {
		if m := row.FindStringSubmatch(line); m != nil {
			rows[m[1]+"|"+m[2]] = m[3]
		}
	}
	if len(rows) == 0 {
		t.Fatal("docs/testing.md has no gate table rows")
	}
	return rows
}

// actionGateTests reads the "- **Gate test:** `TestX`: …" line of each
// "### action" section of docs/faults.md: action → test.
func actionGateTests(t *testing.T) map[string]string {
	t.Helper()
	data, err := os.ReadFile("../docs/faults.md")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	heading := regexp.MustCompile("^### ([a-z-]+)$")
	gate := regexp.MustCompile("^- \\*\\*Gate test:\\*\\* `(Test\\w+)`")
	section := ""
	for _, line := range strings.Split(string(data), "\n") {
		if m := heading.FindStringSubmatch(line); m != nil {
			section = m[1]
		} else if strings.HasPrefix(line, "#") {
			section = ""
		} else if m := gate.FindStringSubmatch(line); m != nil && section != "" {
			out[section] = m[1]
		}
	}
	return out
}

// weightTiers reads scripts/test-weights.txt: cmd test name → tier.
func weightTiers(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open("../scripts/test-weights.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tiers := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		w := strings.Fields(sc.Text())
		if len(w) >= 3 && !strings.HasPrefix(w[0], "#") && !strings.Contains(w[0], "/") {
			tiers[w[0]] = w[2]
		}
	}
	return tiers
}

// testFuncs lists the test functions of cmd's test files.
func testFuncs(t *testing.T) map[string]bool {
	t.Helper()
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^func (Test\w+)\(t \*testing\.T\)`)
	out := map[string]bool{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllStringSubmatch(string(data), -1) {
			out[m[1]] = true
		}
	}
	return out
}
