package cmd

import (
	"testing"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// A single --queue-types or --persistence value is applied to the run, not
// dropped because one cell is "not a matrix".
func TestRunFlagsSingleCellIsApplied(t *testing.T) {
	f, err := scenario.LoadFile("../scenarios.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s, err := f.Find("../scenarios.yaml", "kill-mid-burst")
	if err != nil {
		t.Fatal(err)
	}
	sc := *s
	o := &runOpts{}
	c := newRunWith(&globalOpts{}, o)
	if err := c.ParseFlags([]string{"--queue-types", "classic", "--persistence", "transient"}); err != nil {
		t.Fatal(err)
	}
	if err := o.apply(c, &sc); err != nil {
		t.Fatal(err)
	}
	if sc.IsMatrix() || sc.Queue.Type != scenario.Classic || sc.Load.IsPersistent() {
		t.Fatalf("queue %s persistent %v matrix %v", sc.Queue.Type, sc.Load.IsPersistent(), sc.IsMatrix())
	}
	if want := "classic, durable; transient messages, mandatory"; sc.Topology() != want {
		t.Fatalf("topology %q, want %q", sc.Topology(), want)
	}
}
