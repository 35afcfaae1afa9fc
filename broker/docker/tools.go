package docker

import (
	"context"
	"slices"
	"strings"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// ApplyTool runs p.Inject (one of the broker's own command line tools) in
// the container, bounded by ctx. On a container rmqtorture did not create
// it first records p.Recover in the restore record, so that the next run
// or `rmqtorture cleanup` runs it if this process dies before
// RecoverTool. Errors name the command, the container, its exit code and
// output.
func (c *Container) ApplyTool(ctx context.Context, target scenario.Target, p scenario.ToolPlay) error {
	if err := single(target); err != nil {
		return err
	}
	verb := "made to run " + strings.Join(p.Inject, " ")
	var record func(*Restore)
	if p.Recover != nil {
		verb += ", then " + strings.Join(p.Recover, " ")
		record = func(r *Restore) {
			if !slices.ContainsFunc(r.Commands, func(c []string) bool { return slices.Equal(c, p.Recover) }) {
				r.Commands = append(r.Commands, p.Recover)
			}
		}
	}
	if err := c.alter(verb, record); err != nil {
		return err
	}
	_, err := c.Exec(ctx, p.Inject...)
	return err
}

// RecoverTool runs p.Recover in the container, bounded by ctx, and drops
// it from the restore record once it succeeded.
func (c *Container) RecoverTool(ctx context.Context, target scenario.Target, p scenario.ToolPlay) error {
	if err := single(target); err != nil {
		return err
	}
	if p.Recover == nil {
		return nil
	}
	if _, err := c.Exec(ctx, p.Recover...); err != nil {
		return err
	}
	c.undone(func(r *Restore) {
		r.Commands = slices.DeleteFunc(r.Commands, func(c []string) bool { return slices.Equal(c, p.Recover) })
	})
	return nil
}

// ApplyTool runs p.Inject on each of the target's nodes (see
// Container.ApplyTool).
func (c *Cluster) ApplyTool(ctx context.Context, t scenario.Target, p scenario.ToolPlay) error {
	return c.on(t, func(_ int, n *Container) error { return n.ApplyTool(ctx, self, p) }, nil)
}

// RecoverTool runs p.Recover on each of the target's nodes.
func (c *Cluster) RecoverTool(ctx context.Context, t scenario.Target, p scenario.ToolPlay) error {
	return c.on(t, func(_ int, n *Container) error { return n.RecoverTool(ctx, self, p) }, nil)
}

// knownRecovery reports whether argv is the recovery of an action of the
// action table made of the broker's tools: the only commands a restore
// record may make rmqtorture run (the record is a file, and a file can be
// edited).
func knownRecovery(argv []string) bool {
	for _, a := range scenario.Actions {
		if t := a.Tool(); t != nil && t.Recover != nil && slices.Equal(t.Recover, argv) {
			return true
		}
	}
	return false
}
