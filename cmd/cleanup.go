package cmd

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/rmqtorture/rmqtorture/broker"
)

func newCleanup(g *globalOpts) *cobra.Command {
	var dry, force bool
	c := &cobra.Command{
		Use:   "cleanup",
		Short: "Remove broker containers left by runs that could not clean up",
		Long: `cleanup removes every container carrying the org.rmqtorture.managed=true label
(left behind when rmqtorture itself was killed, or by --keep). It never touches
a container without that label, and skips one whose creating rmqtorture process
is still running on this machine unless --force is given.`,
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
			if len(list) == 0 {
				fmt.Fprintln(c.OutOrStdout(), "no rmqtorture containers to remove")
			}
			for _, ctr := range list {
				name := ctr.ID[:12]
				if len(ctr.Names) > 0 {
					name = ctr.Names[0][1:]
				}
				if pid, err := strconv.Atoi(ctr.Labels[broker.LabelPID]); err == nil && !force && processAlive(pid) {
					fmt.Fprintf(c.OutOrStdout(), "skipping %s: rmqtorture process %d that created it is still running (--force removes it anyway)\n", name, pid)
					continue
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
	c.Flags().BoolVar(&force, "force", false, "also remove containers whose rmqtorture process is still running")
	return c
}

// processAlive reports whether a process with this pid exists here (signal 0
// checks without signalling; EPERM means it exists under another user).
func processAlive(pid int) bool {
	if pid <= 0 || pid == os.Getpid() {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
