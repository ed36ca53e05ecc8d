//! Output: stdout that treats a closed pipe as the end, colour only on a terminal; progress
//! on stderr.

use std::io::{IsTerminal, Write};

/// Stdout, buffered. A closed pipe (`| head`) ends the program quietly with success.
pub struct Out {
    w: std::io::BufWriter<Box<dyn Write>>,
    pub color: bool,
}

impl Out {
    #[allow(clippy::new_without_default)] // it asks the terminal and NO_COLOR: not a default
    pub fn new() -> Out {
        let color = std::io::stdout().is_terminal()
            && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
        Out {
            w: std::io::BufWriter::with_capacity(1 << 16, raw_stdout()),
            color,
        }
    }

    pub fn write_str(&mut self, s: &str) -> anyhow::Result<()> {
        if let Err(e) = self.w.write_all(s.as_bytes()) {
            closed_pipe(e)?;
        }
        Ok(())
    }

    pub fn line(&mut self, s: &str) -> anyhow::Result<()> {
        self.write_str(s)?;
        self.write_str("\n")
    }

    pub fn finish(mut self) -> anyhow::Result<()> {
        if let Err(e) = self.w.flush() {
            closed_pipe(e)?;
        }
        Ok(())
    }

    /// Wraps text in an SGR colour when colour is on.
    pub fn paint(&self, code: &str, s: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }
}

/// Streaming writes; a closed pipe ends the program quietly with success.
impl Write for Out {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self.w.write(buf) {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => std::process::exit(0),
            r => r,
        }
    }

    fn write_vectored(&mut self, bufs: &[std::io::IoSlice<'_>]) -> std::io::Result<usize> {
        match self.w.write_vectored(bufs) {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => std::process::exit(0),
            r => r,
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self.w.flush() {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => std::process::exit(0),
            r => r,
        }
    }
}

/// Stdout without Rust's line buffering: a large write through `Stdout` is searched for
/// its last newline (a `memrchr` over every byte of `ls --json`), then copied again.
fn raw_stdout() -> Box<dyn Write> {
    #[cfg(unix)]
    {
        use std::os::fd::AsFd;
        if let Ok(fd) = std::io::stdout().as_fd().try_clone_to_owned() {
            return Box::new(std::fs::File::from(fd));
        }
    }
    Box::new(std::io::stdout())
}

fn closed_pipe(e: std::io::Error) -> anyhow::Result<()> {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        std::process::exit(0);
    }
    Err(e.into())
}

/// One line of preview text: whitespace folded, controls made visible ([`crate::safe`]),
/// cut to `max` characters.
pub fn preview(s: &str, max: usize) -> String {
    // Only the words that can show are folded: escaping is done character by character, so
    // the preview of the first words that run past `max` is the preview of the whole.
    let mut folded = String::new();
    let mut chars = 0;
    for w in s.split_whitespace() {
        if !folded.is_empty() {
            folded.push(' ');
            chars += 1;
        }
        folded.push_str(w);
        chars += w.chars().count();
        if chars > max {
            break;
        }
    }
    ellipsized(crate::safe::line(&folded), max)
}

/// `s` when it has at most `max` characters, else its first `max - 1` and `…`.
fn ellipsized(s: std::borrow::Cow<'_, str>, max: usize) -> String {
    if s.chars().count() <= max {
        s.into_owned()
    } else {
        let mut t: String = s.chars().take(max.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

/// A line cut to `max` characters, indentation kept (for showing code and output),
/// controls other than tabs made visible ([`crate::safe`]).
pub fn cut(s: &str, max: usize) -> String {
    // The first `max + 1` characters decide (escapes only lengthen): a long line is not
    // escaped whole to show its start.
    let s = s.trim_end();
    let s = s.char_indices().nth(max + 1).map_or(s, |(i, _)| &s[..i]);
    ellipsized(crate::safe::escape_except(s, |c| c == '\t'), max)
}

/// A progress bar on stderr, only when stderr is a terminal and there is much to do.
pub fn progress_bar(total: usize, what: &str) -> Option<indicatif::ProgressBar> {
    if total < 200 || !std::io::stderr().is_terminal() {
        return None;
    }
    let pb = indicatif::ProgressBar::new(total as u64);
    pb.set_style(
        indicatif::ProgressStyle::with_template("{msg} {bar:40} {pos}/{len} {eta}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    pb.set_message(what.to_string());
    Some(pb)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The previews and cuts made from the first characters are those the whole text gives
    /// (the whole text folded and escaped first, as before): every length around the limit,
    /// whitespace runs and trailing blanks, controls that escape to several characters,
    /// wide and combining characters.
    #[test]
    fn previews_and_cuts_of_the_start_are_those_of_the_whole() {
        fn preview_whole(s: &str, max: usize) -> String {
            let folded: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
            ellipsized(crate::safe::line(&folded), max)
        }
        fn cut_whole(s: &str, max: usize) -> String {
            ellipsized(crate::safe::escape_except(s.trim_end(), |c| c == '\t'), max)
        }
        let pieces = [
            "a", "bc", " ", "  ", "\t", "\n", "\r", "\x1b[2J", "\x07", "日本", "é", "e\u{301}",
            "\u{202e}", "😀", "\u{a0}", "\u{3000}", "word ", "\u{7f}",
        ];
        let mut rng = sessiontree_testkit::rng::Rng(0xc07);
        for _ in 0..20_000 {
            let mut s = String::new();
            for _ in 0..rng.pick(40) {
                s.push_str(pieces[rng.pick(pieces.len())]);
            }
            let max = rng.pick(12);
            assert_eq!(preview(&s, max), preview_whole(&s, max), "{s:?} {max}");
            assert_eq!(cut(&s, max), cut_whole(&s, max), "{s:?} {max}");
        }
    }
}
