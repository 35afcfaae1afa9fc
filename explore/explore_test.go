package explore

import (
	"bytes"
	"context"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// shipped loads a scenario of the shipped file.
func shipped(t *testing.T, name string) *scenario.Scenario {
	t.Helper()
	f, err := scenario.LoadFile(filepath.Join("..", "scenarios.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := f.Find("scenarios.yaml", name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Trial i of a seed is the same scenario every time it is drawn, and on
// every machine: seed 7's first five trials of kill-mid-burst are pinned
// in testdata (go test ./explore -update rewrites it).
func TestDrawIsDeterministic(t *testing.T) {
	base := shipped(t, "kill-mid-burst")
	sp := Space{}.Defaults(base)
	var all [][]byte
	for round := range 2 {
		var b bytes.Buffer
		for i := range 5 {
			_, data, err := Draw(base, sp, 7, i)
			if err != nil {
				t.Fatal(err)
			}
			b.Write(data)
			b.WriteString("---\n")
		}
		all = append(all, b.Bytes())
		if round == 1 && !bytes.Equal(all[0], all[1]) {
			t.Fatal("the same seed drew different trials")
		}
	}
	golden := filepath.Join("testdata", "seed7.golden")
	if os.Getenv("UPDATE_GOLDEN") != "" {
		if err := os.WriteFile(golden, all[0], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(all[0], want) {
		t.Errorf("seed 7 drew other trials than %s (UPDATE_GOLDEN=1 go test ./explore rewrites it after a deliberate change)", golden)
	}
	_, other, _ := Draw(base, sp, 8, 0)
	if first, _, _ := bytes.Cut(all[0], []byte("---\n")); bytes.Equal(first, other) {
		t.Error("seeds 7 and 8 drew the same first trial")
	}
}

// Every drawn trial is a scenario the loader accepts, on a single broker
// and on a cluster, with each step inside the space.
func TestDrawStaysInSpace(t *testing.T) {
	for _, name := range []string{"kill-mid-burst", "power-loss-cluster-stream"} {
		base := shipped(t, name)
		sp := Space{}.Defaults(base)
		if err := sp.Check(); err != nil {
			t.Fatal(err)
		}
		for i := range 50 {
			tr, data, err := Draw(base, sp, 99, i)
			if err != nil {
				t.Fatalf("%s trial %d: %v", name, i, err)
			}
			if _, err := scenario.Parse("t.yaml", data); err != nil {
				t.Fatalf("%s trial %d: %v", name, i, err)
			}
			if len(tr.Steps) < 1 || len(tr.Steps) > 2 {
				t.Errorf("%s trial %d: %d steps", name, i, len(tr.Steps))
			}
			for j, s := range tr.Steps {
				if !slices.Contains(sp.Actions, s.Action) || s.Percent < 10 || s.Percent > 90 || (j > 0 && s.Percent <= tr.Steps[j-1].Percent) {
					t.Errorf("%s trial %d step %d: %+v outside the space", name, i, j, s)
				}
				if (base.Broker.Nodes > 1) != (s.Target != "") {
					t.Errorf("%s trial %d step %d: target %q on %d nodes", name, i, j, s.Target, base.Broker.Nodes)
				}
			}
		}
	}
	if slices.Contains(Space{}.Defaults(shipped(t, "kill-mid-burst")).Actions, scenario.PowerLoss) {
		t.Error("power-loss drawn without broker.filesystem: lazy")
	}
	if !slices.Contains(Space{}.Defaults(shipped(t, "power-loss-cluster-stream")).Actions, scenario.PowerLoss) ||
		slices.Contains(Space{}.Defaults(shipped(t, "power-loss-cluster-stream")).Actions, scenario.Partition) {
		t.Error("a lazy stream cluster: want power-loss drawn, partition not")
	}
}

// known fails when a kill of at least 1 s is among the steps and at least
// 400 orders are published: the shrinker must reach its minimum.
func known(tr Trial) bool {
	if tr.Messages < 400 {
		return false
	}
	for _, s := range tr.Steps {
		if s.Action == scenario.Kill && s.DownMS >= 1000 {
			return true
		}
	}
	return false
}

var start = Trial{Seed: 1, Nodes: 3, Mode: scenario.ConfirmWindow, Messages: 3200, Window: 100, Rate: 2000, Publishers: 3, Steps: []Step{
	{Action: scenario.Stop, Target: scenario.TargetFollower, Percent: 30, DownMS: 4000},
	{Action: scenario.Kill, Target: scenario.TargetLeader, Percent: 60, DownMS: 4800},
}}

func TestShrinkReachesTheKnownMinimum(t *testing.T) {
	runs := 0
	fails := func(_ context.Context, tr Trial) (bool, error) { runs++; return known(tr), nil }
	got, err := Shrink(context.Background(), start, fails, func(Trial) bool { return true }, DefaultRule)
	if err != nil {
		t.Fatal(err)
	}
	want := Trial{Seed: 1, Nodes: 1, Mode: scenario.ConfirmWindow, Messages: 400, Window: 1, Rate: 100, Publishers: 1,
		Steps: []Step{{Action: scenario.Kill, Percent: 1, DownMS: 1200}}}
	if !reflect.DeepEqual(got.Minimal, want) {
		t.Errorf("minimal\n %+v\nwant\n %+v", got.Minimal, want)
	}
	if got.Runs != runs || !reflect.DeepEqual(got.Original, start) || len(got.Removed) == 0 || got.Removed[0] != "dropped step 1 (stop follower at 30%)" {
		t.Errorf("runs %d (counted %d), removed %q", got.Runs, runs, got.Removed)
	}
	t.Logf("%d candidates, %d runs: %q", got.Candidates, got.Runs, got.Removed)
}

// A flaky failure (80 % of the runs of a failing trial) still shrinks to a
// trial that fails by the same condition, and never keeps one that cannot
// fail; a refused candidate costs no run.
func TestShrinkFlaky(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	fails := func(_ context.Context, tr Trial) (bool, error) { return known(tr) && rng.Float64() < 0.8, nil }
	refused := 0
	valid := func(tr Trial) bool {
		if tr.Window == 1 { // as if the loader refused a window of 1
			refused++
			return false
		}
		return true
	}
	got, err := Shrink(context.Background(), start, fails, valid, DefaultRule)
	if err != nil {
		t.Fatal(err)
	}
	if !known(got.Minimal) || len(got.Minimal.Steps) != 1 || got.Minimal.Nodes != 1 || got.Minimal.Window < 2 || refused == 0 {
		t.Errorf("minimal %+v (refused %d): want a single kill on one broker that still fails, window ≥ 2", got.Minimal, refused)
	}
	if _, err := Shrink(context.Background(), start, fails, valid, Rule{Runs: 2, Need: 3}); err == nil {
		t.Error("a rule needing more failures than runs was accepted")
	}
}

// Wilson's interval for 8 of 10 is [0.490, 0.943]; 5 clean runs make a
// fix the better bet.
func TestRate(t *testing.T) {
	r := NewRate(8, 10)
	if math.Abs(r.Low-0.4902) > 0.0005 || math.Abs(r.High-0.9433) > 0.0005 || r.CleanRunsToCallFixed() != 5 {
		t.Errorf("%+v, clean runs %d: want [0.4902, 0.9433], 5", r, r.CleanRunsToCallFixed())
	}
	if r := NewRate(0, 10); r.Low != 0 || r.CleanRunsToCallFixed() != 0 {
		t.Errorf("0 of 10: %+v", r)
	}
	if r := NewRate(10, 10); r.High != 1 || r.Low < 0.69 || r.Low > 0.73 {
		t.Errorf("10 of 10: %+v", r)
	}
}

func TestSpaceCheck(t *testing.T) {
	sp := Space{}.Defaults(shipped(t, "kill-mid-burst"))
	sp.Steps, sp.Percent, sp.DownMS = [2]int{3, 2}, [2]int{0, 50}, [2]int64{50, 100}
	err := sp.Check()
	if err == nil {
		t.Fatal("a bad space passed")
	}
	want := "steps 3–2: want 1 ≤ min ≤ max ≤ 5\npublished_percent 0–50: want 1 ≤ min ≤ max ≤ 99\ndown 50–100 ms: want 100 ≤ min ≤ max"
	if err.Error() != want {
		t.Errorf("%q\nwant %q", err, want)
	}
}

// A scenario's space: section bounds every trial drawn from it.
func TestDrawFromScenarioSpace(t *testing.T) {
	f, err := scenario.Parse("s.yaml", []byte(`version: 1
scenarios:
  - name: s
    load: {messages: 1000, modes: [confirm-each, confirm-window]}
    space: {actions: [kill], steps: [3, 3], published_percent: [20, 30], down: [200ms, 300ms], modes: [confirm-each], messages: [300, 300]}
`))
	if err != nil {
		t.Fatal(err)
	}
	base := &f.Scenarios[0]
	sp := FromScenario(base.Space).Defaults(base)
	for i := range 10 {
		tr, _, err := Draw(base, sp, 5, i)
		if err != nil {
			t.Fatal(err)
		}
		if len(tr.Steps) != 3 || tr.Mode != scenario.ConfirmEach || tr.Messages != 300 {
			t.Fatalf("trial %d: %+v", i, tr)
		}
		for _, s := range tr.Steps {
			if s.Action != scenario.Kill || s.Percent < 20 || s.Percent > 30 || (s.DownMS != 200 && s.DownMS != 300) {
				t.Errorf("trial %d: step %+v outside the space", i, s)
			}
		}
	}
}
