//go:build !linux

package store

// adviseSmallPages is Linux-only (see advise_linux.go).
func adviseSmallPages(string) {}
