/// The currencies the ledger accepts and how their minor units are written.
///
/// Amounts are stored as integers of the currency's minor unit (cents, yen, fils), so writing
/// one as a decimal needs the unit's size: ISO 4217's "minor unit" column. The list is ISO 4217's
/// currencies people pay with; funds, precious metals and special codes (XAU, XDR, USN, …) are
/// left out, except the indexed units Chile and Uruguay price things in (CLF, UYI, UYW). ANG and
/// BGN, being replaced by XCG and EUR, stay so that ledgers kept in them still read.
package enum Currencies {
    /// Each code's number of decimal places.
    package static let minorUnits: [String: Int] = {
        var units: [String: Int] = [:]
        for (places, codes) in [(2, twoPlaces), (0, noPlaces), (3, threePlaces), (4, fourPlaces)] {
            for code in codes.split(separator: " ") {
                units[String(code)] = places
            }
        }
        return units
    }()

    private static let noPlaces = "BIF CLP DJF GNF ISK JPY KMF KRW PYG RWF UGX UYI VND VUV XAF XOF XPF"
    private static let threePlaces = "BHD IQD JOD KWD LYD OMR TND"
    private static let fourPlaces = "CLF UYW"
    private static let twoPlaces = """
        AED AFN ALL AMD ANG AOA ARS AUD AWG AZN BAM BBD BDT BGN BMD BND BOB BRL BSD BTN BWP BYN BZD \
        CAD CDF CHF CNY COP CRC CUC CUP CVE CZK DKK DOP DZD EGP ERN ETB EUR FJD FKP GBP GEL GHS GIP \
        GMD GTQ GYD HKD HNL HTG HUF IDR ILS INR IRR JMD KES KGS KHR KPW KYD KZT LAK LBP LKR LRD LSL \
        MAD MDL MGA MKD MMK MNT MOP MRU MUR MVR MWK MXN MYR MZN NAD NGN NIO NOK NPR NZD PAB PEN PGK \
        PHP PKR PLN QAR RON RSD RUB SAR SBD SCR SDG SEK SGD SHP SLE SOS SRD SSP STN SVC SYP SZL THB \
        TJS TMT TOP TRY TTD TWD TZS UAH USD UYU UZS VED VES WST XCD XCG YER ZAR ZMW ZWG
        """

    /// Whether `code` is one of ``minorUnits``, written in capitals as ISO 4217 does.
    package static func isKnown(_ code: String) -> Bool {
        minorUnits[code] != nil
    }

    /// `amount` minor units as a plain decimal, as payment links want it: 1234 USD is `12.34`,
    /// -5 USD `-0.05`, 1234 JPY `1234`, 1234 BHD `1.234`. An unknown code is taken to have two
    /// places. No grouping separators and no symbol.
    package static func decimal(_ amount: Int64, currency: String) -> String {
        let places = minorUnits[currency] ?? 2
        // The magnitude, so Int64.min has no positive counterpart to overflow into.
        var digits = String(amount.magnitude)
        let sign = amount < 0 ? "-" : ""
        guard places > 0 else { return sign + digits }
        if digits.count <= places {
            digits = String(repeating: "0", count: places + 1 - digits.count) + digits
        }
        let point = digits.index(digits.endIndex, offsetBy: -places)
        return sign + digits[..<point] + "." + digits[point...]
    }

    /// One-tap links for paying `amount` to the owner of `handles`: Venmo (US dollars only, with
    /// `note` prefilled) and PayPal.Me; nil where they have no handle or Venmo cannot take the
    /// currency. Handles are checked where they are saved (letters, digits, `-`, `_`), but are
    /// percent-encoded here anyway so a link can never be bent by one.
    package static func payLinks(handles: PaymentHandles?, amount: Int64, currency: String, note: String) -> PayLinks {
        let value = decimal(amount, currency: currency)
        let venmo = handles?.venmo.flatMap { handle -> String? in
            guard !handle.isEmpty, currency == "USD" else { return nil }
            return "https://venmo.com/\(percentEncoded(handle))?txn=pay&amount=\(value)&note=\(percentEncoded(note))"
        }
        let paypal = handles?.paypal.flatMap { handle -> String? in
            guard !handle.isEmpty else { return nil }
            return "https://www.paypal.me/\(percentEncoded(handle))/\(value)\(percentEncoded(currency))"
        }
        return PayLinks(venmo: venmo, paypal: paypal)
    }

    /// `text` with every byte but RFC 3986's unreserved characters (`A–Z a–z 0–9 - . _ ~`)
    /// percent-encoded, so it is safe in a path segment and a query value alike.
    private static func percentEncoded(_ text: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var bytes: [UInt8] = []
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                bytes.append(byte)
            default:
                bytes += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
