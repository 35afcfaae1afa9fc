package docker

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/client"

	"github.com/rmqtorture/rmqtorture/broker/lazyfs"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// dataDir is the broker's data directory in the container.
const dataDir = "/var/lib/rabbitmq"

// The control files a power cut is proven by (scenario.PowerCut).
const (
	controlSynced   = "rmqtorture-control-synced"
	controlUnsynced = "rmqtorture-control-unsynced"
)

// LazyRoot is the folder under which each node's lazy filesystem lives,
// one folder per node named NAME-PID (PID: the rmqtorture process that
// mounted it), holding the backing directory "data" and the mountpoint
// "mnt".
func LazyRoot() string { return filepath.Join(os.TempDir(), "rmqtorture-lazyfs") }

// lazyData is a node's data directory on a lazy filesystem.
type lazyData struct {
	dir string // LazyRoot()/NAME-PID
	fs  *lazyfs.FS
}

// EngineOnThisHost reports whether the Docker Engine rmqtorture talks to
// runs on this host (a unix socket): only then can a lazy filesystem
// mounted here be a container's data directory. A TCP or SSH engine, a
// Docker context or Docker Desktop's VM cannot see this host's mounts.
func EngineOnThisHost() bool {
	return strings.HasPrefix(resolveEngine().host, "unix://")
}

// newLazyData mounts a lazy filesystem for the container name, its backing
// directory a copy of image's data directory (the Erlang cookie, owned by
// the broker's user), and returns the bind mount that puts it at
// /var/lib/rabbitmq.
func newLazyData(ctx context.Context, cli *client.Client, image, runID, name string) (*lazyData, mount.Mount, error) {
	if !EngineOnThisHost() {
		return nil, mount.Mount{}, fmt.Errorf("broker.filesystem: lazy needs the Docker Engine on this host (a unix socket), not %s: its containers must see a filesystem mounted here", EngineHost())
	}
	dir := filepath.Join(LazyRoot(), name+"-"+strconv.Itoa(os.Getpid()))
	backing, mnt := filepath.Join(dir, "data"), filepath.Join(dir, "mnt")
	for _, d := range []string{backing, mnt} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, mount.Mount{}, fmt.Errorf("lazy filesystem: %w", err)
		}
	}
	l := &lazyData{dir: dir}
	if err := copyImageData(ctx, cli, image, runID, backing); err != nil {
		l.remove()
		return nil, mount.Mount{}, err
	}
	fs, err := lazyfs.Mount(backing, mnt)
	if err != nil {
		l.remove()
		return nil, mount.Mount{}, fmt.Errorf("broker.filesystem: lazy: %w (it needs /dev/fuse and root)", err)
	}
	l.fs = fs
	return l, mount.Mount{Type: mount.TypeBind, Source: mnt, Target: dataDir}, nil
}

// mountLazy mounts the lazy filesystem of the container name when lazy is
// set (CreateOptions.LazyFS) and adds its bind mount to host; nil when it
// is not set. A kept container cannot have one: the filesystem ends with
// this process.
func mountLazy(ctx context.Context, cli *client.Client, lazy, keep bool, image, runID, name string, host *container.HostConfig) (*lazyData, error) {
	if !lazy {
		return nil, nil
	}
	if keep {
		return nil, errors.New("broker.filesystem: lazy cannot be kept (--keep): the filesystem ends with this process")
	}
	l, m, err := newLazyData(ctx, cli, image, runID, name)
	if err != nil {
		return nil, err
	}
	host.Mounts = append(host.Mounts, m)
	return l, nil
}

// copyImageData copies image's /var/lib/rabbitmq into dir, owners and
// modes kept, through a labelled container that is created, never
// started, and removed.
func copyImageData(ctx context.Context, cli *client.Client, image, runID, dir string) error {
	tmp, err := cli.ContainerCreate(ctx, &container.Config{Image: image, Labels: Labels(runID, false)}, nil, nil, nil, "")
	if err != nil {
		return fmt.Errorf("lazy filesystem: read %s of %s: %w", dataDir, image, err)
	}
	defer cli.ContainerRemove(context.WithoutCancel(ctx), tmp.ID, container.RemoveOptions{Force: true})
	rc, _, err := cli.CopyFromContainer(ctx, tmp.ID, dataDir)
	if err != nil {
		return fmt.Errorf("lazy filesystem: read %s of %s: %w", dataDir, image, err)
	}
	defer rc.Close()
	return untar(rc, dir)
}

// untar writes the archive of one directory (entries "rabbitmq/…") into
// dir, that directory's own entry setting dir's owner and mode.
func untar(r io.Reader, dir string) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("lazy filesystem: image data: %w", err)
		}
		_, rel, _ := strings.Cut(filepath.Clean(h.Name), "/")
		if strings.HasPrefix(rel, "..") || filepath.IsAbs(rel) {
			return fmt.Errorf("lazy filesystem: image data: unsafe entry %q", h.Name)
		}
		p := filepath.Join(dir, rel)
		mode := os.FileMode(h.Mode) & os.ModePerm
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, mode); err != nil {
				return err
			}
		case tar.TypeReg:
			f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		case tar.TypeSymlink:
			if err := os.Symlink(h.Linkname, p); err != nil {
				return err
			}
		default:
			continue
		}
		if err := os.Lchown(p, h.Uid, h.Gid); err != nil {
			return err
		}
		if h.Typeflag != tar.TypeSymlink {
			if err := os.Chmod(p, mode); err != nil {
				return err
			}
		}
	}
}

// cut writes the control files, kills the container with kill, and
// drops what the filesystem holds unsynced, once the container has
// stopped (stopped: whether it has).
func (l *lazyData) cut(ctx context.Context, kill func() error, stopped func(context.Context) error) (scenario.PowerCut, error) {
	var rec scenario.PowerCut
	began := time.Now()
	mnt := l.fs.Mountpoint
	if err := writeControl(filepath.Join(mnt, controlSynced), true); err != nil {
		return rec, err
	}
	if err := writeControl(filepath.Join(mnt, controlUnsynced), false); err != nil {
		return rec, err
	}
	rec.KillSentAfterMS = float64(time.Since(began).Microseconds()) / 1000
	if err := kill(); err != nil {
		return rec, err
	}
	if err := stopped(ctx); err != nil {
		return rec, err
	}
	drop, err := l.fs.Cut()
	rec.DroppedFiles, rec.DroppedBytes, rec.DroppedEntries, rec.SyncedSinceMount = drop.Files, drop.Bytes, drop.Entries, drop.Synced
	if b, rerr := os.ReadFile(filepath.Join(mnt, controlSynced)); rerr == nil && string(b) == controlSynced {
		rec.SyncedControlKept = true
	}
	// Its data is gone: the file is absent, or empty when an fsync of
	// the broker's committed its creation (see lazyfs's tracker).
	if b, rerr := os.ReadFile(filepath.Join(mnt, controlUnsynced)); errors.Is(rerr, os.ErrNotExist) || (rerr == nil && len(b) == 0) {
		rec.UnsyncedControlDropped = true
	}
	return rec, err
}

// writeControl writes a control file holding its own name; synced: the
// file and its directory are fsynced.
func writeControl(p string, synced bool) error {
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("power-loss: control file: %w", err)
	}
	_, err = f.WriteString(filepath.Base(p))
	if err == nil && synced {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && synced {
		err = syncDir(filepath.Dir(p))
	}
	if err != nil {
		return fmt.Errorf("power-loss: control file: %w", err)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// remove unmounts the filesystem (lazily, should a container still hold
// it) and removes its folder; nothing for nil.
func (l *lazyData) remove() error {
	if l == nil {
		return nil
	}
	var err error
	if l.fs != nil {
		err = l.fs.Unmount()
	}
	if err == nil {
		err = os.RemoveAll(l.dir)
	}
	return err
}

// waitStopped returns once c's container no longer runs (polled every
// 50 ms): after a kill, before a start or a power cut.
func (c *Container) waitStopped(ctx context.Context) error {
	for {
		info, err := c.guard(ctx)
		if err != nil {
			return err
		}
		if info.State == nil || !info.State.Running {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("container %q still running after the kill: %w", c.Name, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// PowerLoss cuts the broker's power (engine.PowerCutter): the control
// files, SIGKILL, then its lazy filesystem drops what was not synced. The
// container is left stopped, for Start.
func (c *Container) PowerLoss(ctx context.Context, target scenario.Target) ([]scenario.PowerCut, error) {
	if err := single(target); err != nil {
		return nil, err
	}
	if c.lazy == nil {
		return nil, c.notLazy()
	}
	if err := c.alter("power cut and started again", func(r *Restore) { r.Start = true }); err != nil {
		return nil, err
	}
	rec, err := c.lazy.cut(ctx, func() error {
		if err := c.cli.ContainerKill(ctx, c.ID, "SIGKILL"); err != nil {
			return fmt.Errorf("kill container %q: %w", c.Name, err)
		}
		return nil
	}, c.waitStopped)
	rec.Node = c.Name
	if err != nil {
		return []scenario.PowerCut{rec}, fmt.Errorf("power-loss on %s: %w", c.Name, err)
	}
	c.log.Info("broker power cut", "container", c.Name, "dropped_bytes", rec.DroppedBytes, "dropped_files", rec.DroppedFiles, "dropped_entries", rec.DroppedEntries)
	return []scenario.PowerCut{rec}, nil
}

// notLazy is the error of a power-loss port called on a container whose
// data is not on a lazy filesystem.
func (c *Container) notLazy() error {
	return fmt.Errorf("power-loss: the data of %s is not on a lazy filesystem (broker.filesystem: lazy)", c.Name)
}

// WriteBack makes what the broker wrote so far durable
// (engine.PowerCutter): a node that has run for a while has had its files
// written back by the kernel.
func (c *Container) WriteBack(context.Context) error {
	if c.lazy == nil {
		return c.notLazy()
	}
	c.lazy.fs.WriteBack()
	return nil
}

// LazyLeftover is a lazy filesystem's folder under LazyRoot (a node's
// backing directory and mountpoint) whose rmqtorture process may be gone.
type LazyLeftover struct {
	Dir       string // LazyRoot()/NAME-PID
	Container string // NAME: the broker container it served
	PID       int    // the rmqtorture process that mounted it
	Mounted   bool   // still in /proc/mounts (a dead process's mount answers nothing)
}

// Alive reports whether its rmqtorture process still runs (a process with
// its pid exists).
func (l LazyLeftover) Alive() bool { return processExists(l.PID) }

// LazyLeftovers lists the folders under LazyRoot, each with whether its
// filesystem is still mounted; none when LazyRoot does not exist.
func LazyLeftovers() ([]LazyLeftover, error) {
	entries, err := os.ReadDir(LazyRoot())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	mounts, err := lazyfs.Mounts()
	if err != nil {
		return nil, err
	}
	var out []LazyLeftover
	for _, e := range entries {
		i := strings.LastIndexByte(e.Name(), '-')
		pid, perr := strconv.Atoi(e.Name()[i+1:])
		if !e.IsDir() || i < 0 || perr != nil {
			continue
		}
		dir := filepath.Join(LazyRoot(), e.Name())
		out = append(out, LazyLeftover{Dir: dir, Container: e.Name()[:i], PID: pid,
			Mounted: slices.Contains(mounts, filepath.Join(dir, "mnt"))})
	}
	return out, nil
}

// Remove unmounts l's filesystem (lazily) and removes its folder. Its
// container must be gone first.
func (l LazyLeftover) Remove() error {
	if l.Mounted {
		if err := lazyfs.UnmountPath(filepath.Join(l.Dir, "mnt")); err != nil {
			return err
		}
	}
	return os.RemoveAll(l.Dir)
}

// PowerLoss cuts the power of the target's nodes all at once
// (engine.PowerCutter): each node's control files, then SIGKILL of every
// target node, then each node's lazy filesystem drops what it had not
// synced. The nodes are left stopped, for Start; one record per node, in
// node order.
func (c *Cluster) PowerLoss(ctx context.Context, t scenario.Target) ([]scenario.PowerCut, error) {
	nodes, err := c.nodesOf(t)
	if err != nil {
		return nil, err
	}
	recs := make([]scenario.PowerCut, len(nodes))
	err = c.each(nodes, func(i int, n *Container) error {
		k := slices.Index(nodes, i)
		cuts, err := n.PowerLoss(ctx, self)
		if len(cuts) == 1 {
			recs[k] = cuts[0]
		}
		if err != nil {
			return err
		}
		c.mu.Lock()
		c.state[i-1].down = true
		c.mu.Unlock()
		return nil
	})
	return recs, err
}

// WriteBack makes what every node wrote so far durable
// (engine.PowerCutter).
func (c *Cluster) WriteBack(ctx context.Context) error {
	var errs []error
	for _, n := range c.nodes {
		errs = append(errs, n.WriteBack(ctx))
	}
	return errors.Join(errs...)
}
