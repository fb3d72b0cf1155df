package git

import "context"

// RefsIn lists the refs of the bare repository at dir with the objects
// they name: a repository held under EachLocked, or a backup's copy being
// verified (`grasp admin backup --verify`, core/admin).
func (r *Repos) RefsIn(ctx context.Context, dir string) (map[string]string, error) {
	return r.refsAt(ctx, dir)
}

// Fsck runs `git fsck` on the bare repository at dir, relaxed only as the
// transfers are (fsckIgnored): nil when every object is whole and every
// ref and alternate leads to objects that are there.
func (r *Repos) Fsck(ctx context.Context, dir string) error {
	args := []string{}
	for _, f := range fsckIgnored {
		args = append(args, "-c", "fsck."+f.id+"="+f.level)
	}
	args = append(args, "fsck", "--no-progress", "--no-dangling", "--full")
	_, err := r.run(ctx, dir, nil, args...)
	return err
}
