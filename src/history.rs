//! A timestamped copy of a run's reports (`outputs.timestamped`), so the reports of a
//! nightly job pile up by date instead of overwriting each other.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// Copies `written` into `<dir>/history/<UTC time>/` and returns the copies.
pub fn copy(written: &[PathBuf], dir: &Path, started: SystemTime) -> std::io::Result<Vec<PathBuf>> {
    let target = dir.join("history").join(stamp(started));
    std::fs::create_dir_all(&target)?;
    let mut out = Vec::new();
    for path in written {
        let Some(name) = path.file_name() else { continue };
        let copy = target.join(name);
        std::fs::copy(path, &copy).map_err(|e| {
            std::io::Error::new(e.kind(), format!("cannot copy {} to {}: {e}", path.display(), copy.display()))
        })?;
        out.push(copy);
    }
    Ok(out)
}

/// `2026-12-01T05-13-33Z`: sortable, and no `:` (which some CI artifact stores refuse).
pub fn stamp(t: SystemTime) -> String {
    let secs = t.duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!("{y:04}-{m:02}-{d:02}T{:02}-{:02}-{:02}Z", rest / 3600, rest % 3600 / 60, rest % 60)
}

/// Howard Hinnant's days-to-civil: (year, month, day) of a day count since 1970-01-01.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn stamps_are_utc_and_sortable() {
        assert_eq!(stamp(SystemTime::UNIX_EPOCH), "1970-01-01T00-00-00Z");
        assert_eq!(stamp(SystemTime::UNIX_EPOCH + Duration::from_secs(1_796_102_013)), "2026-12-01T05-13-33Z");
        assert_eq!(stamp(SystemTime::UNIX_EPOCH + Duration::from_secs(951_782_400)), "2000-02-29T00-00-00Z");
    }

    #[test]
    fn copies_land_under_history() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("junit.xml");
        std::fs::write(&file, "<x/>").unwrap();
        let copies = copy(&[file], dir.path(), SystemTime::UNIX_EPOCH).unwrap();
        assert_eq!(copies, vec![dir.path().join("history/1970-01-01T00-00-00Z/junit.xml")]);
        assert_eq!(std::fs::read_to_string(&copies[0]).unwrap(), "<x/>");
    }
}
