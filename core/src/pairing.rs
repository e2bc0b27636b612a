//! Pairing codes: the one-time code `keyless-host serve` and `keyless-host pair` print, and the
//! reading of what a user typed for one. The host and the extension's popup read a code here,
//! once, so a typo is caught before it is sent and never counts as a wrong try.

/// The characters of a code: no look-alikes (no I, L, O, 0 or 1).
pub const ALPHABET: &[u8] = b"ABCDEFGHJKMNPQRSTUVWXYZ23456789";
/// The characters of a code, without its dash.
pub const LEN: usize = 8;

/// A Chrome extension's id: 32 letters a-p (the first half of a SHA-256, one letter per nibble).
#[must_use]
pub fn is_chrome_id(id: &str) -> bool {
    id.len() == 32 && id.bytes().all(|b| (b'a'..=b'p').contains(&b))
}

/// A Firefox extension's internal UUID (the host of its `moz-extension://` origin, chosen per
/// profile at install): lowercase hex in groups of 8-4-4-4-12.
#[must_use]
pub fn is_firefox_uuid(id: &str) -> bool {
    let groups: Vec<&str> = id.split('-').collect();
    groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(g, n)| g.len() == n && g.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
}

/// The origin an extension's requests carry, from the id it pairs with: `chrome-extension://ID`
/// for a Chrome id, `moz-extension://UUID` for a Firefox internal UUID; `None` for anything else.
/// A pairing token is bound to that origin.
#[must_use]
pub fn extension_origin(id: &str) -> Option<String> {
    if is_chrome_id(id) {
        Some(format!("chrome-extension://{id}"))
    } else if is_firefox_uuid(id) {
        Some(format!("moz-extension://{id}"))
    } else {
        None
    }
}

/// A code made of random bytes (one character per byte), as `K7QM-2XD9`.
#[must_use]
pub fn code_from(random: [u8; LEN]) -> String {
    let chars: String = random
        .iter()
        .map(|b| char::from(ALPHABET[usize::from(*b) % ALPHABET.len()]))
        .collect();
    format!("{}-{}", &chars[..4], &chars[4..])
}

/// What a user typed for a code, as the code it must be (`k7qm 2xd9` → `K7QM-2XD9`), or why it
/// cannot be one. Case, spaces and dashes do not matter.
///
/// # Errors
/// A message for the user: the field is empty, too short or long, or holds a character no code
/// has.
pub fn read_code(typed: &str) -> Result<String, String> {
    let chars: String = typed
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '-')
        .map(|c| c.to_ascii_uppercase())
        .collect();
    if chars.is_empty() {
        return Err(
            "enter the pairing code that keyless-host serve (or keyless-host pair) printed".into(),
        );
    }
    if let Some(bad) = chars
        .chars()
        .find(|c| !c.is_ascii() || !ALPHABET.contains(&(*c as u8)))
    {
        let hint = match bad {
            'I' | 'L' | '1' => " (codes have no I, L or 1)",
            'O' | '0' => " (codes have no O or 0)",
            _ => "",
        };
        return Err(format!(
            "\"{bad}\" is not in a pairing code{hint}: a code is 8 letters and digits, like ABCD-2345"
        ));
    }
    if chars.len() != LEN {
        return Err(format!(
            "a pairing code has {LEN} characters (4, a dash, 4); this has {}",
            chars.len()
        ));
    }
    Ok(format!("{}-{}", &chars[..4], &chars[4..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_extension_id_names_its_browser_and_origin() {
        let chrome = "gplahjhhbhedphhkkcaefhjjcgoeckci";
        assert_eq!(
            extension_origin(chrome).as_deref(),
            Some("chrome-extension://gplahjhhbhedphhkkcaefhjjcgoeckci")
        );
        let firefox = "4b1f0c3e-7d2a-4e8b-9c61-0a5d3f2e1b7c";
        assert_eq!(
            extension_origin(firefox).as_deref(),
            Some("moz-extension://4b1f0c3e-7d2a-4e8b-9c61-0a5d3f2e1b7c")
        );
        for bad in [
            "",
            "keyless@keyless.dev",
            "4B1F0C3E-7D2A-4E8B-9C61-0A5D3F2E1B7C",
            "4b1f0c3e-7d2a-4e8b-9c61-0a5d3f2e1b7",
            "4b1f0c3e-7d2a-4e8b-9c61-0a5d3f2e1b7c/",
            "4b1f0c3e7d2a4e8b9c610a5d3f2e1b7c",
            "gplahjhhbhedphhkkcaefhjjcgoeckcz",
            "as-run-123",
            "moz-extension://4b1f0c3e-7d2a-4e8b-9c61-0a5d3f2e1b7c",
        ] {
            assert_eq!(extension_origin(bad), None, "{bad}");
        }
    }

    #[test]
    fn codes_read_whatever_the_case_spaces_and_dashes() {
        assert_eq!(read_code(" k7qm-2xd9 ").as_deref(), Ok("K7QM-2XD9"));
        assert_eq!(read_code("K7QM 2XD9").as_deref(), Ok("K7QM-2XD9"));
        assert_eq!(read_code("k7qm2xd9").as_deref(), Ok("K7QM-2XD9"));
        assert!(read_code("").is_err_and(|e| e.starts_with("enter the pairing code")));
        assert!(read_code("  - ").is_err());
        assert!(read_code("K7QM-2XD").is_err_and(|e| e.contains("this has 7")));
        assert!(read_code("K7QM-2XD0").is_err_and(|e| e.contains("no O or 0")));
        assert!(read_code("ILLQ-2XD9").is_err_and(|e| e.contains("no I, L or 1")));
        assert!(read_code("K7QM-2XDé").is_err());
    }

    #[test]
    fn made_codes_read_back() {
        for seed in 0..=255u8 {
            let code = code_from([seed, seed.wrapping_mul(7), 3, 250, 31, 62, 93, 124]);
            assert_eq!(read_code(&code).as_deref(), Ok(code.as_str()));
        }
    }
}
