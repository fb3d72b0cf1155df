package store

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// dropResidentPages takes the resident pages of badger's table files in
// tables and of every value-log file but the newest out of this process's
// memory (MADV_DONTNEED), and returns how many bytes of mappings it
// advised. The files' pages stay in the kernel's page cache, so a page read
// again costs a minor fault, not a disk read.
//
// The caller guarantees that none of these mappings goes away meanwhile
// (Store.dropResident): DONTNEED on addresses that were unmapped and reused
// for the Go runtime's own memory would zero that memory. Value-log files
// other than the newest are never written, truncated or remapped again, and
// the newest is left alone.
func dropResidentPages(realDir string, tables map[uint64]bool) int64 {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return 0
	}
	defer f.Close()
	type mapping struct {
		start, end uint64
		vlog       int64 // file number of a value-log file, -1 for a table
	}
	var maps []mapping
	newest := int64(-1)
	prefix := realDir + string(filepath.Separator)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Bytes()
		i := bytes.Index(line, []byte(" "+prefix))
		if i < 0 {
			continue
		}
		name := string(line[i+1+len(prefix):])
		m := mapping{vlog: -1}
		if base, ok := strings.CutSuffix(name, ".sst"); ok {
			id, err := strconv.ParseUint(base, 10, 64)
			if err != nil || !tables[id] {
				continue
			}
		} else if base, ok := strings.CutSuffix(name, ".vlog"); ok {
			fid, err := strconv.ParseInt(base, 10, 64)
			if err != nil {
				continue
			}
			m.vlog = fid
			newest = max(newest, fid)
		} else {
			continue
		}
		rng, _, _ := bytes.Cut(line, []byte(" "))
		lo, hi, ok := bytes.Cut(rng, []byte("-"))
		if !ok {
			continue
		}
		var err1, err2 error
		m.start, err1 = strconv.ParseUint(string(lo), 16, 64)
		m.end, err2 = strconv.ParseUint(string(hi), 16, 64)
		if err1 != nil || err2 != nil || m.end <= m.start {
			continue
		}
		maps = append(maps, m)
	}
	var advised int64
	for _, m := range maps {
		if m.vlog >= 0 && m.vlog == newest {
			continue
		}
		if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, uintptr(m.start), uintptr(m.end-m.start), syscall.MADV_DONTNEED); errno == 0 {
			advised += int64(m.end - m.start)
		}
	}
	return advised
}

// residentFileBytes is the process's file-backed resident memory (RssFile).
func residentFileBytes() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "RssFile:"); ok {
			fields := strings.Fields(v)
			if len(fields) > 0 {
				kb, _ := strconv.ParseInt(fields[0], 10, 64)
				return kb << 10
			}
		}
	}
	return 0
}
