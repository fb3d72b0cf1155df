package main

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/scripts"
)

// exportScripts writes the stock plugins embedded in the binary into dir,
// for operators who have only the binary. It never overwrites a file: an
// operator's edited copy is theirs.
func exportScripts(dir string, stdout, stderr io.Writer) int {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fmt.Fprintf(stderr, "grasp scripts export: %v\n", err)
		return 1
	}
	names, err := fs.Glob(scripts.FS, "*.js")
	if err != nil {
		fmt.Fprintf(stderr, "grasp scripts export: %v\n", err)
		return 1
	}
	failed := false
	for _, name := range names {
		b, err := fs.ReadFile(scripts.FS, name)
		if err == nil {
			err = writeNew(filepath.Join(dir, name), b)
		}
		if err != nil {
			fmt.Fprintf(stderr, "grasp scripts export: %v\n", err)
			failed = true
			continue
		}
		fmt.Fprintln(stdout, filepath.Join(dir, name))
	}
	if failed {
		return 1
	}
	return 0
}

func writeNew(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// checkStockConfigs checks the config table of every plugin whose file is a
// stock plugin against the keys that plugin reads, with file:line:col.
func checkStockConfigs(cfg config.Config, path string) error {
	var problems []config.Problem
	for _, sec := range []struct {
		kind string
		ps   []config.Plugin
	}{{"accept", cfg.Plugins.Accept}, {"relay_selection", cfg.Plugins.RelaySelection}, {"throttle", cfg.Plugins.Throttle}} {
		for i, p := range sec.ps {
			found, _ := scripts.CheckConfig(p.File, p.Config)
			for _, f := range found {
				problems = append(problems, config.Problem{Key: fmt.Sprintf("plugins.%s[%d].config.%s", sec.kind, i, f.Key), Msg: f.Msg})
			}
		}
	}
	if len(problems) == 0 {
		return nil
	}
	var data []byte
	if path != "" {
		data, _ = os.ReadFile(path)
	}
	return config.Locate(data, path, problems)
}
