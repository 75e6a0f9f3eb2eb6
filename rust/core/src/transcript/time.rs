//! The timestamps records carry.

/// The timestamp form of docs/TRANSCRIPT.md: `YYYY-MM-DDTHH:MM:SSZ`, or with `.ffffff` when
/// the microseconds are not zero; a real calendar date and time of day.
pub fn check_time(text: &str) -> Result<(), String> {
    let b = text.as_bytes();
    let digits = |r: std::ops::Range<usize>| -> Option<u32> {
        let part = b.get(r)?;
        part.iter()
            .all(u8::is_ascii_digit)
            .then(|| part.iter().fold(0, |n, d| n * 10 + u32::from(d - b'0')))
    };
    let ok = (|| {
        let fraction = match b.len() {
            20 => None,
            27 if b[19] == b'.' => Some(digits(20..26)?),
            _ => return None,
        };
        let shape = [
            (4, b'-'),
            (7, b'-'),
            (10, b'T'),
            (13, b':'),
            (16, b':'),
            (b.len() - 1, b'Z'),
        ];
        if shape.iter().any(|&(i, c)| b[i] != c) {
            return None;
        }
        let (year, month, day) = (digits(0..4)?, digits(5..7)?, digits(8..10)?);
        let (hour, minute, second) = (digits(11..13)?, digits(14..16)?, digits(17..19)?);
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
        let days = [
            31,
            if leap { 29 } else { 28 },
            31,
            30,
            31,
            30,
            31,
            31,
            30,
            31,
            30,
            31,
        ];
        let valid = year >= 1
            && (1..=12).contains(&month)
            && (1..=days[month as usize - 1]).contains(&day)
            && hour < 24
            && minute < 60
            && second < 60
            && fraction != Some(0);
        valid.then_some(())
    })();
    ok.ok_or_else(|| {
        format!(
            "'time' must be a UTC timestamp like 2025-01-31T09:30:00Z (with .ffffff only for \
             non-zero microseconds), got {text:?}"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps() {
        for good in ["2024-02-29T23:59:59Z", "2026-12-01T00:00:00.000001Z"] {
            assert!(check_time(good).is_ok(), "{good}");
        }
        for bad in [
            "2023-02-29T00:00:00Z",
            "2026-12-01T00:00:00.000000Z",
            "2026-12-01 00:00:00Z",
            "2026-12-01T24:00:00Z",
            "2026-12-01T00:00:00+00:00",
        ] {
            assert!(check_time(bad).is_err(), "{bad}");
        }
    }
}
