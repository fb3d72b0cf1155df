package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
)

// profileIngest starts the CPU profiles of one scale point's ingest when dir
// is set: the server's (through its benchprofile switch) and the bench
// client's own, both on the same cores. The returned function stops both;
// with dir empty it does nothing.
func profileIngest(dir string, p *proc, server string, events int) (stop func() error, err error) {
	if dir == "" {
		return func() error { return nil }, nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := p.startProfile(filepath.Join(abs, fmt.Sprintf("ingest-%s-%d.pprof", server, events))); err != nil {
		return nil, err
	}
	f, err := os.Create(filepath.Join(abs, fmt.Sprintf("ingest-client-%s-%d.pprof", server, events)))
	if err != nil {
		_ = p.stopProfile()
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		_ = p.stopProfile()
		return nil, err
	}
	return func() error {
		pprof.StopCPUProfile()
		cerr := f.Close()
		if err := p.stopProfile(); err != nil {
			return err
		}
		return cerr
	}, nil
}
