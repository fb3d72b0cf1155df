package githttp

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/grasp-dev/grasp/core/git"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/outcome"
)

// maxPktPayload is git's LARGE_PACKET_DATA_MAX: 65520 bytes per packet
// including the 4-byte length header.
const maxPktLen = 65520

// PushCommands is the command section at the start of a receive-pack request.
type PushCommands struct {
	Updates []git.RefUpdate
	// Caps are the capabilities the client asked for on its first command.
	Caps map[string]string
	// Shallow lists the "shallow <oid>" lines a shallow client sends first.
	Shallow []string
}

// Has reports whether the client requested capability c.
func (p PushCommands) Has(c string) bool { _, ok := p.Caps[c]; return ok }

var errPktFormat = errors.New("malformed pkt-line")

// ReadPushCommands reads the pkt-line command list at the start of a
// receive-pack request body, up to and including its flush packet, and
// returns the parsed commands together with the exact bytes consumed so that
// they can be replayed into git. It reads at most maxBytes bytes and at most
// maxCommands commands; the pack that follows the flush is never touched.
func ReadPushCommands(r io.Reader, maxBytes, maxCommands int) (PushCommands, []byte, error) {
	var cmds PushCommands
	var raw bytes.Buffer
	var hdr [4]byte
	for {
		if raw.Len()+4 > maxBytes {
			return cmds, raw.Bytes(), outcome.Errorf(outcome.Invalid, "push command list exceeds %d bytes", maxBytes)
		}
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return cmds, raw.Bytes(), outcome.Errorf(outcome.Invalid, "reading push commands: %w", noEOF(err))
		}
		raw.Write(hdr[:])
		n, err := strconv.ParseUint(string(hdr[:]), 16, 16)
		if err != nil {
			return cmds, raw.Bytes(), outcome.Errorf(outcome.Invalid, "%w: bad length %q", errPktFormat, hdr[:])
		}
		if n == 0 {
			break
		}
		if n < 4 || n > maxPktLen {
			return cmds, raw.Bytes(), outcome.Errorf(outcome.Invalid, "%w: length %d out of range", errPktFormat, n)
		}
		if raw.Len()+int(n)-4 > maxBytes {
			return cmds, raw.Bytes(), outcome.Errorf(outcome.Invalid, "push command list exceeds %d bytes", maxBytes)
		}
		start := raw.Len()
		if _, err := io.CopyN(&raw, r, int64(n)-4); err != nil {
			return cmds, raw.Bytes(), outcome.Errorf(outcome.Invalid, "reading push commands: %w", noEOF(err))
		}
		line := strings.TrimSuffix(string(raw.Bytes()[start:]), "\n")
		if oid, ok := strings.CutPrefix(line, "shallow "); ok && len(cmds.Updates) == 0 {
			if !nip34.IsObjectID(oid) {
				return cmds, raw.Bytes(), outcome.Errorf(outcome.Invalid, "%w: bad shallow line", errPktFormat)
			}
			cmds.Shallow = append(cmds.Shallow, oid)
			continue
		}
		if len(cmds.Updates) >= maxCommands {
			return cmds, raw.Bytes(), outcome.Errorf(outcome.Invalid, "push has more than %d ref updates", maxCommands)
		}
		if len(cmds.Updates) == 0 {
			var caps string
			line, caps, _ = strings.Cut(line, "\x00")
			cmds.Caps = parseCaps(caps)
		}
		u, err := parseCommand(line)
		if err != nil {
			return cmds, raw.Bytes(), err
		}
		cmds.Updates = append(cmds.Updates, u)
	}
	if len(cmds.Updates) == 0 && len(cmds.Shallow) > 0 {
		return cmds, raw.Bytes(), outcome.Errorf(outcome.Invalid, "%w: shallow lines without commands", errPktFormat)
	}
	if cmds.Caps == nil {
		cmds.Caps = map[string]string{}
	}
	return cmds, raw.Bytes(), nil
}

func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

func parseCaps(s string) map[string]string {
	caps := map[string]string{}
	for _, c := range strings.Fields(s) {
		k, v, _ := strings.Cut(c, "=")
		caps[k] = v
	}
	return caps
}

func parseCommand(line string) (git.RefUpdate, error) {
	parts := strings.SplitN(line, " ", 3)
	if len(parts) != 3 {
		return git.RefUpdate{}, outcome.Errorf(outcome.Invalid, "%w: command %q is not \"<old> <new> <ref>\"", errPktFormat, git.Clip(line, 120))
	}
	u := git.RefUpdate{Old: parts[0], New: parts[1], Ref: parts[2]}
	if !nip34.IsObjectID(u.Old) || !nip34.IsObjectID(u.New) || len(u.Old) != len(u.New) {
		return git.RefUpdate{}, outcome.Errorf(outcome.Invalid, "%w: command %q has a bad object id", errPktFormat, git.Clip(line, 120))
	}
	if err := git.CheckRefName(u.Ref); err != nil {
		return git.RefUpdate{}, err
	}
	return u, nil
}

// pktLine frames one payload as a pkt-line.
func pktLine(payload string) []byte {
	return []byte(fmt.Sprintf("%04x%s", len(payload)+4, payload))
}

const pktFlush = "0000"

// withCapability returns raw, a push's command list as ReadPushCommands
// read it, with capability c requested on its first command (after any
// shallow lines). A line that would grow past a pkt-line is left as is.
func withCapability(raw []byte, c string) []byte {
	var out bytes.Buffer
	rest := raw
	done := false
	for len(rest) >= 4 {
		n, err := strconv.ParseUint(string(rest[:4]), 16, 16)
		if err != nil || n < 4 || int(n) > len(rest) {
			break // the flush, or (never, after ReadPushCommands) garbage
		}
		line := string(rest[4:n])
		rest = rest[n:]
		if done || strings.HasPrefix(line, "shallow ") {
			out.Write(pktLine(line))
			continue
		}
		done = true
		payload, nl := strings.CutSuffix(line, "\n")
		cmd, caps, _ := strings.Cut(payload, "\x00")
		if !slices.Contains(strings.Fields(caps), c) {
			caps = strings.TrimSpace(caps + " " + c)
		}
		grown := cmd + "\x00" + caps
		if nl {
			grown += "\n"
		}
		if len(grown)+4 > maxPktLen {
			grown = line
		}
		out.Write(pktLine(grown))
	}
	out.Write(rest)
	return out.Bytes()
}

// encodePushCommands is the inverse of ReadPushCommands (used by tests and
// the fuzz target to check round trips).
func encodePushCommands(c PushCommands) []byte {
	var b bytes.Buffer
	for _, s := range c.Shallow {
		b.Write(pktLine("shallow " + s))
	}
	for i, u := range c.Updates {
		line := u.Old + " " + u.New + " " + u.Ref
		if i == 0 {
			var caps []string
			for k, v := range c.Caps {
				if v != "" {
					k += "=" + v
				}
				caps = append(caps, k)
			}
			line += "\x00" + strings.Join(caps, " ")
		}
		b.Write(pktLine(line + "\n"))
	}
	b.WriteString(pktFlush)
	return b.Bytes()
}
