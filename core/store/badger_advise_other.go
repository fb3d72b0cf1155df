//go:build !linux

package store

// adviseSmallPages is Linux-only (see badger_advise_linux.go).
func adviseSmallPages(string) {}
