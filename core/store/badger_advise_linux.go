package store

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// adviseSmallPages asks the kernel to keep the memory-mapped file at path
// (a memtable WAL) in small pages: MADV_RANDOM on every mapping of it in
// this process turns off fault readahead, which is what builds large page
// cache folios (16 KiB and more on ext4 with Linux 6.x) as a file is written
// sequentially through mmap.
//
// Why it matters (issue 15 part 3): every group commit appends to the WAL's
// last page and fdatasync cleans it, so the next commit dirties it again and
// the kernel writes it back whole. With large folios each commit rewrote
// ~16-18 KiB for a few KiB of events; with 4 KiB pages it rewrites at most
// one page. The mapping is badger's; the advice changes how its pages are
// cached, never what is written or when it is durable. A mapping that is
// gone meanwhile (the WAL was flushed and unmapped) only makes madvise fail,
// which is ignored.
func adviseSmallPages(path string) {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return
	}
	defer f.Close()
	suffix := []byte(" " + path)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.HasSuffix(line, suffix) {
			continue
		}
		rng, _, _ := bytes.Cut(line, []byte(" "))
		lo, hi, ok := bytes.Cut(rng, []byte("-"))
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(string(lo), 16, 64)
		end, err2 := strconv.ParseUint(string(hi), 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			continue
		}
		_, _, _ = syscall.Syscall(syscall.SYS_MADVISE, uintptr(start), uintptr(end-start), syscall.MADV_RANDOM)
	}
}
