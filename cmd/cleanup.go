package cmd

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/rmqtorture/rmqtorture/broker"
)

func newCleanup(g *globalOpts) *cobra.Command {
	var dry bool
	c := &cobra.Command{
		Use:   "cleanup",
		Short: "Remove broker containers left by runs that could not clean up",
		Long: `cleanup removes every container carrying the org.rmqtorture.managed=true label
(left behind when rmqtorture itself was killed, or by --keep). It never touches
a container without that label.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			ctx := c.Context()
			cli, err := broker.Docker(ctx)
			if err != nil {
				return opErr(err)
			}
			defer cli.Close()
			list, err := broker.Leftovers(ctx, cli)
			if err != nil {
				return opErr(fmt.Errorf("list containers: %w", err))
			}
			for _, ctr := range list {
				name := ctr.ID[:12]
				if len(ctr.Names) > 0 {
					name = ctr.Names[0][1:]
				}
				if dry {
					fmt.Fprintf(c.OutOrStdout(), "would remove %s (%s, run %s)\n", name, ctr.State, ctr.Labels[broker.LabelRun])
					continue
				}
				if err := broker.RemoveLeftover(ctx, cli, ctr.ID); err != nil {
					return opErr(err)
				}
				fmt.Fprintf(c.OutOrStdout(), "removed %s\n", name)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&dry, "dry-run", false, "list what would be removed")
	return c
}
