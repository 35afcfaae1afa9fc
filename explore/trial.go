// Package explore draws fault schedules from a search space by seed and
// shrinks a failing one toward the smallest that still fails.
//
// A Trial is a base scenario's broker and queue with a drawn load and
// fault steps. Trial i of seed s is the same on every machine (Draw), and
// it becomes a scenario file that `rmqtorture run -f` accepts (YAML): the
// scenario loader applies its defaults and every rule to it, so a trial
// is never a scenario the tool would refuse.
package explore

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// Step is one drawn fault step: an action, what it acts on (a cluster
// only), when it fires and how long it lasts.
type Step struct {
	Action scenario.Action `json:"action"`
	// Target is the step's target on a cluster ("" on a single broker);
	// Node the node of target node.
	Target scenario.TargetKind `json:"target,omitempty"`
	Node   int                 `json:"node,omitempty"`
	// Percent fires the step once this share (1–99) of the burst has been
	// published (published_percent).
	Percent int `json:"published_percent"`
	// Down is how long the fault lasts before its recovery, in ms (0: the
	// action takes no down).
	DownMS int64 `json:"down_ms,omitempty"`
}

// Trial is one drawn experiment: Seed and Index name it (Draw), the rest
// is what differs from the base scenario.
type Trial struct {
	Seed  uint64 `json:"seed"`
	Index int    `json:"index"`
	// Nodes is the broker's node count (the base's, or 1 once shrunk to a
	// single broker).
	Nodes    int           `json:"nodes"`
	Mode     scenario.Mode `json:"mode"`
	Messages int           `json:"messages"`
	// Window is confirm-window's unconfirmed maximum (0: another mode).
	Window int `json:"window,omitempty"`
	// Rate is the publish rate in msg/s (0: as fast as it can).
	Rate       int    `json:"rate,omitempty"`
	Publishers int    `json:"publishers"`
	Steps      []Step `json:"steps"`
}

// Name is the trial's scenario name: BASE-sSEED-tINDEX.
func (t Trial) Name(base string) string { return fmt.Sprintf("%s-s%d-t%d", base, t.Seed, t.Index) }

// String is the trial in one line, for logs and reports.
func (t Trial) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d orders %s", t.Messages, t.Mode)
	if t.Window > 0 {
		fmt.Fprintf(&b, " (window %d)", t.Window)
	}
	if t.Rate > 0 {
		fmt.Fprintf(&b, " at %d msg/s", t.Rate)
	}
	if t.Publishers > 1 {
		fmt.Fprintf(&b, ", %d publishers", t.Publishers)
	}
	if t.Nodes > 1 {
		fmt.Fprintf(&b, ", %d nodes", t.Nodes)
	}
	for _, s := range t.Steps {
		fmt.Fprintf(&b, "; %s", s.Action)
		switch {
		case s.Target == scenario.TargetNode:
			fmt.Fprintf(&b, " node %d", s.Node)
		case s.Target != "":
			fmt.Fprintf(&b, " %s", s.Target)
		}
		fmt.Fprintf(&b, " at %d%%", s.Percent)
		if s.DownMS > 0 {
			fmt.Fprintf(&b, " down %s", time.Duration(s.DownMS)*time.Millisecond)
		}
	}
	return b.String()
}

// Scenario builds the trial's scenario from base (a loaded scenario,
// defaults applied): base's broker, queue, consumers and drain, the
// trial's load and faults, base's expectations for the trial's mode. It
// returns the scenario file's YAML, which `rmqtorture run NAME -f FILE`
// runs as it is, and the scenario loaded from it; an error when the
// loader refuses it (file:line and field).
func (t Trial) Scenario(base *scenario.Scenario) ([]byte, *scenario.Scenario, error) {
	s, err := clone(base)
	if err != nil {
		return nil, nil, err
	}
	s.Name = t.Name(base.Name)
	s.Description = fmt.Sprintf("explore: trial %d of seed %d from %s: %s", t.Index, t.Seed, base.Name, t)
	s.Broker.Nodes = t.Nodes
	if t.Nodes <= 1 {
		s.Broker.Nodes = 1
		s.Load.ConnectTo, s.Load.ConnectNode = "", 0
		s.Queue.Node, s.Queue.AlsoBindNode, s.Queue.DeadLetterNode = 0, 0, 0
	}
	s.Matrix = scenario.Matrix{}
	s.Runs = nil
	seed := t.Seed*0x9e3779b97f4a7c15 + uint64(t.Index) // the run's jitter seed, fixed per trial
	s.Seed = &seed
	s.Load.Modes = []scenario.Mode{t.Mode}
	s.Load.Messages = t.Messages
	s.Load.Burst = nil
	if t.Window > 0 {
		s.Load.Window = t.Window
	}
	s.Load.Rate = float64(t.Rate)
	s.Load.Publishers = max(1, t.Publishers)
	s.Faults = make([]scenario.Fault, len(t.Steps))
	for i, st := range t.Steps {
		pct := float64(st.Percent)
		f := scenario.Fault{Action: st.Action, PublishedPercent: &pct}
		if t.Nodes > 1 {
			f.Target, f.Node = st.Target, st.Node
		}
		if st.DownMS > 0 {
			f.Down = scenario.Duration(time.Duration(st.DownMS) * time.Millisecond)
		}
		s.Faults[i] = f
	}
	if e, ok := s.Expect.Modes[t.Mode]; ok {
		s.Expect.Modes = map[scenario.Mode]scenario.ModeExpectations{t.Mode: e}
	} else {
		s.Expect.Modes = nil
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(scenario.File{Version: 1, Scenarios: []scenario.Scenario{*s}}); err != nil {
		return nil, nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, nil, err
	}
	data := buf.Bytes()
	f, err := scenario.Parse(s.Name+".yaml", data)
	if err != nil {
		return data, nil, err
	}
	return data, &f.Scenarios[0], nil
}

// clone deep-copies a scenario through its YAML.
func clone(s *scenario.Scenario) (*scenario.Scenario, error) {
	data, err := yaml.Marshal(s)
	if err != nil {
		return nil, err
	}
	var out scenario.Scenario
	if err := yaml.Unmarshal(data, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Cells are the trial's steps as "action × target" ("broker" on a single
// broker), sorted: what a report counts as covered.
func (t Trial) Cells() []string {
	out := make([]string, 0, len(t.Steps))
	for _, s := range t.Steps {
		target := string(s.Target)
		if target == "" {
			target = "broker"
		}
		out = append(out, string(s.Action)+" × "+target)
	}
	slices.Sort(out)
	return out
}
