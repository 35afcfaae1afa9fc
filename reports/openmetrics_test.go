package reports

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// The OpenMetrics text of a real kill-mid-burst result and of a matrix
// run is stable (golden), passes client_golang's lint (promlint: names,
// units, counter and summary conventions), ends with # EOF, and holds the
// ledger as result.json has it.
func TestOpenMetrics(t *testing.T) {
	for _, name := range []string{"kill-mid-burst.result.json", "matrix.json.golden"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		res, err := Decode(data)
		if err != nil {
			t.Fatal(err)
		}
		problems, err := testutil.CollectAndLint(ResultCollector{Results: []*scenario.Result{res}})
		if err != nil || len(problems) > 0 {
			t.Fatalf("%s: lint %v %+v", name, err, problems)
		}
		var buf bytes.Buffer
		if err := OpenMetrics(&buf, res); err != nil {
			t.Fatal(err)
		}
		out := buf.String()
		if !strings.HasSuffix(out, "# EOF\n") {
			t.Fatalf("%s: no # EOF at the end", name)
		}
		m := res.Modes[0]
		want := `rmqtorture_messages{class="sent",mode="` + string(m.Mode) + `",`
		if !strings.Contains(out, want) {
			t.Fatalf("%s: no %s… in\n%s", name, want, out)
		}
		golden(t, strings.TrimSuffix(strings.TrimSuffix(name, ".json.golden"), ".result.json")+".openmetrics.golden", buf.Bytes())
	}
}

// One scenario run twice in one file (--images runs it once per image) is
// told apart by its run id: the file holds both, and the registry finds
// no series twice.
func TestOpenMetricsSameScenarioTwice(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "kill-mid-burst.result.json"))
	if err != nil {
		t.Fatal(err)
	}
	a, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Decode(data)
	b.RunID = "other"
	var buf bytes.Buffer
	if err := OpenMetrics(&buf, a, b); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{a.RunID, "other"} {
		if !strings.Contains(buf.String(), `rmqtorture_verdict{run_id="`+id+`",scenario="kill-mid-burst",status="pass"} 1`) {
			t.Errorf("no verdict of run %s in\n%s", id, buf.String())
		}
	}
}
