package git

// fsckIgnored are the fsck checks real repositories trip that do not make
// an object dangerous to serve, so a push or fetch with them is accepted
// (receive.fsckObjects and fetch.fsckObjects are on: audit 2026-11, F10).
// With those settings git is strict: a check that is only a warning for
// `git fsck` refuses the transfer. Everything else stays an error: a `.git`
// or `..` tree entry (hasDotgit, hasDotdot), a .gitmodules URL or path
// that git would run as an option (gitmodulesUrl, gitmodulesPath), bad
// object ids, broken objects.
var fsckIgnored = []struct{ id, level, why string }{
	// trees written by git before 2006 and some other tools (e.g. old
	// oh-my-zsh and Homebrew history) spell modes as 040000
	{"zeroPaddedFilemode", "ignore", "modes such as 040000 in old history"},
	// commits converted from other systems carry odd dates and zones
	{"badTimezone", "warn", "time zones such as +0000 written oddly by converters"},
	{"badDate", "warn", "dates converters wrote without a number"},
	{"missingSpaceBeforeDate", "warn", "author lines without the space before the date (old importers)"},
	{"zeroPaddedDate", "warn", "dates with leading zeros (old importers)"},
	{"missingEmail", "warn", "authors without an email (svn and cvs conversions)"},
	{"badEmail", "warn", "authors whose email is not bracketed as git writes it"},
	// messages carrying NUL bytes (some tools' encodings)
	{"nulInCommit", "warn", "NUL bytes in commit messages"},
}

// fsckArgs turns on strict object checking for what a stranger sends (op
// "receive") or what the hunter fetches ("fetch"), with fsckIgnored relaxed.
func fsckArgs(op string) []string {
	args := []string{"-c", op + ".fsckObjects=true"}
	for _, f := range fsckIgnored {
		args = append(args, "-c", op+".fsck."+f.id+"="+f.level)
	}
	return args
}
