//! Postal addresses of a user (spec 001 "Address").

use crate::error::{ApiError, ApiResult};
use herald_storage::identity::Address;
use serde::{Deserialize, Serialize};

/// Add address and Edit Address (`addressID` only on edit).
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AddressWrite {
    /// Edit Address only: the address to change (as read); an add carrying one is refused.
    #[serde(rename = "addressID")]
    pub address_id: Option<String>,
    /// Required and not blank on add; at most 255 characters.
    pub postal_code: Option<String>,
    /// First name of the addressee; at most 255 characters.
    pub first_name: Option<String>,
    /// Last name of the addressee; at most 255 characters.
    pub last_name: Option<String>,
    /// Kind of address, free text; at most 255 characters.
    pub address_type: Option<String>,
    /// Label of the address, free text; at most 255 characters.
    pub address_title: Option<String>,
    /// At most 255 characters.
    pub city: Option<String>,
    /// Code of the city; at most 255 characters.
    pub city_code: Option<String>,
    /// At most 255 characters.
    pub town: Option<String>,
    /// Code of the town; at most 255 characters.
    pub town_code: Option<String>,
    /// At most 255 characters.
    pub district: Option<String>,
    /// Code of the district; at most 255 characters.
    pub district_code: Option<String>,
    /// Street, number and the rest; at most 2000 characters.
    pub address_details: Option<String>,
    /// How to find the place; at most 255 characters (`direction` is accepted too).
    #[serde(alias = "direction")]
    pub directions: Option<String>,
    /// `true`: this becomes the user's one default address; `false` on edit unmarks it. The first
    /// address is the default.
    pub default_address: Option<bool>,
}

impl AddressWrite {
    /// The field lengths: 255 characters, `addressDetails` 2000.
    pub fn validate(&self) -> ApiResult<()> {
        let fields = [
            ("postalCode", &self.postal_code),
            ("firstName", &self.first_name),
            ("lastName", &self.last_name),
            ("addressType", &self.address_type),
            ("addressTitle", &self.address_title),
            ("city", &self.city),
            ("cityCode", &self.city_code),
            ("town", &self.town),
            ("townCode", &self.town_code),
            ("district", &self.district),
            ("districtCode", &self.district_code),
            ("directions", &self.directions),
        ];
        for (name, v) in fields {
            super::validate::max_length(name, v, 255)?;
        }
        super::validate::max_length("addressDetails", &self.address_details, 2000)
    }

    /// The spec's answer when the postal code is absent.
    pub fn missing() -> ApiError {
        ApiError::bad_request("Mandatory data is missing").with_word("BAD_REQUEST")
    }

    /// Copies the present fields onto `a`.
    pub fn apply(&self, a: &mut Address) {
        let set = |dst: &mut Option<String>, src: &Option<String>| {
            if src.is_some() {
                *dst = src.clone();
            }
        };
        if let Some(p) = &self.postal_code {
            a.postal_code = p.clone();
        }
        set(&mut a.first_name, &self.first_name);
        set(&mut a.last_name, &self.last_name);
        set(&mut a.address_type, &self.address_type);
        set(&mut a.address_title, &self.address_title);
        set(&mut a.city, &self.city);
        set(&mut a.city_code, &self.city_code);
        set(&mut a.town, &self.town);
        set(&mut a.town_code, &self.town_code);
        set(&mut a.district, &self.district);
        set(&mut a.district_code, &self.district_code);
        set(&mut a.address_details, &self.address_details);
        set(&mut a.directions, &self.directions);
    }
}

/// Adds `a` to the user's addresses: the first one is the default until
/// another is made the default, and a new default takes it from the others.
pub fn add(list: &mut Vec<Address>, mut a: Address, default: Option<bool>) {
    a.default_address = default.unwrap_or(false) || list.is_empty();
    if a.default_address {
        list.iter_mut().for_each(|x| x.default_address = false);
    }
    list.push(a);
}

/// Edits address `id` with the present fields of `b` (one default at most);
/// 404 when the user has no such address.
pub fn edit(list: &mut [Address], id: &str, b: &AddressWrite) -> ApiResult<()> {
    let idx = list
        .iter()
        .position(|a| a.id == id)
        .ok_or_else(|| ApiError::not_found("Address does not exist").with_word("ADDRESS_NOT_FOUND"))?;
    b.apply(&mut list[idx]);
    match b.default_address {
        Some(true) => list.iter_mut().enumerate().for_each(|(i, a)| a.default_address = i == idx),
        Some(false) => list[idx].default_address = false,
        None => {}
    }
    Ok(())
}

/// An address as it is read: every field a string, `defaultAddress`
/// included (`"true"` or `"false"`).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AddressView {
    /// UUID assigned when the address was added: the `addressID` of Edit Address.
    #[serde(rename = "addressID")]
    pub address_id: String,
    /// Empty when not set.
    pub address_title: String,
    /// Empty when not set.
    pub address_type: String,
    /// Empty when not set.
    pub address_details: String,
    /// Empty when not set.
    pub city: String,
    /// Empty when not set.
    pub city_code: String,
    /// `"true"` for the user's default address, else `"false"`.
    pub default_address: String,
    /// The `directions` written; empty when not set.
    pub direction: String,
    /// Empty when not set.
    pub district: String,
    /// Empty when not set.
    pub district_code: String,
    /// Empty when not set.
    pub first_name: String,
    /// Empty when not set.
    pub last_name: String,
    /// Always present.
    pub postal_code: String,
    /// Empty when not set.
    pub town: String,
    /// Empty when not set.
    pub town_code: String,
}

impl AddressView {
    /// The reading form of a stored address.
    pub fn of(a: &Address) -> AddressView {
        let s = |v: &Option<String>| v.clone().unwrap_or_default();
        AddressView {
            address_id: a.id.clone(),
            address_title: s(&a.address_title),
            address_type: s(&a.address_type),
            address_details: s(&a.address_details),
            city: s(&a.city),
            city_code: s(&a.city_code),
            default_address: a.default_address.to_string(),
            direction: s(&a.directions),
            district: s(&a.district),
            district_code: s(&a.district_code),
            first_name: s(&a.first_name),
            last_name: s(&a.last_name),
            postal_code: a.postal_code.clone(),
            town: s(&a.town),
            town_code: s(&a.town_code),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn address(id: &str) -> Address {
        Address { id: id.into(), postal_code: "75001".into(), ..Address::default() }
    }

    #[test]
    fn one_default_address_at_most() {
        let mut list = Vec::new();
        add(&mut list, address("a"), None);
        assert!(list[0].default_address, "the first is the default");
        add(&mut list, address("b"), None);
        assert!(list[0].default_address && !list[1].default_address);
        add(&mut list, address("c"), Some(true));
        assert_eq!(list.iter().filter(|a| a.default_address).count(), 1);
        assert!(list[2].default_address);

        let make_default =
            AddressWrite { default_address: Some(true), city: Some("Lyon".into()), ..Default::default() };
        edit(&mut list, "a", &make_default).unwrap();
        assert_eq!(list.iter().map(|a| a.default_address).collect::<Vec<_>>(), [true, false, false]);
        assert_eq!(list[0].city.as_deref(), Some("Lyon"));
        let not_default = AddressWrite { default_address: Some(false), ..Default::default() };
        edit(&mut list, "a", &not_default).unwrap();
        assert!(list.iter().all(|a| !a.default_address));
        assert_eq!(edit(&mut list, "zz", &not_default).unwrap_err().status, http::StatusCode::NOT_FOUND);
    }
}
