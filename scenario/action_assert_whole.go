package scenario

import "time"

// AssertWhole asserts that the cluster is whole at its point of the
// timeline: within Timeout, every node answers `rabbitmqctl
// cluster_status`, lists every node as running and reports no
// partition (https://www.rabbitmq.com/docs/partitions#detecting). A
// cluster still split then fails the run with what each node
// reported; the burst and the drain go on. It changes nothing on the
// broker. Cluster only.
const AssertWhole Action = "assert-whole"

// DefaultAssertWholeTimeout is how long an assert-whole step that sets no
// timeout waits for the cluster to be whole.
const DefaultAssertWholeTimeout = 30 * time.Second

// assertWholeSpec: timeout (a duration, at least 1s, default
// DefaultAssertWholeTimeout).
var assertWholeSpec = ActionSpec{
	Name:   AssertWhole,
	Params: []Param{ParamTimeout},
	Leaves: "up", Repeatable: true, ClusterOnly: true, Asserts: true,
	While: "while rmqtorture checked that the cluster was whole",
	defaults: func(d defaulter, fp string, f *Fault) {
		d.dur(fp+"timeout", &f.Timeout, DefaultAssertWholeTimeout)
	},
	validate: validateAssertWhole,
}

// validateAssertWhole checks an assert-whole step: it looks at the whole
// cluster, so it names no node, and its timeout is at least 1s.
func validateAssertWhole(p *parser, fp string, f Fault) {
	for _, k := range []string{"target", "node"} {
		if p.has(fp + "." + k) {
			p.fail(fp+"."+k, "assert-whole asks every node of the cluster: leave %s out", k)
		}
	}
	if p.has(fp+".timeout") && f.Timeout < Duration(time.Second) {
		p.fail(fp+".timeout", "must be at least 1s, got %s", f.Timeout.D())
	}
}
