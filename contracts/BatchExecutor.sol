// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {Account} from "@openzeppelin/contracts/account/Account.sol";
import {ERC7821} from "@openzeppelin/contracts/account/extensions/draft-ERC7821.sol";
import {ERC4337Utils} from "@openzeppelin/contracts/account/utils/ERC4337Utils.sol";
import {IERC1271} from "@openzeppelin/contracts/interfaces/IERC1271.sol";
import {IEntryPoint} from "@openzeppelin/contracts/interfaces/IERC4337.sol";
import {ERC1155Holder} from "@openzeppelin/contracts/token/ERC1155/utils/ERC1155Holder.sol";
import {ERC721Holder} from "@openzeppelin/contracts/token/ERC721/utils/ERC721Holder.sol";
import {SignerEIP7702} from "@openzeppelin/contracts/utils/cryptography/signers/SignerEIP7702.sol";

/// @title BatchExecutor
/// @notice The code an embedded wallet's account delegates to with EIP-7702, composed only of
/// OpenZeppelin Contracts' audited parts (all stateless, so nothing clashes with the account's
/// storage): Account makes it an ERC-4337 account whose UserOperations the account's own key signs
/// (SignerEIP7702, which also answers ERC-1271); ERC7821 runs a batch all or none, for the account
/// itself or the EntryPoint; the holders and Account's `receive` keep transfers to the account
/// working once it has code.
contract BatchExecutor is Account, SignerEIP7702, ERC7821, ERC721Holder, ERC1155Holder, IERC1271 {
    /// @notice EntryPoint v0.8 at its canonical address: the release `@account-abstraction/contracts`
    /// publishes as stable and the first with EIP-7702 accounts (OpenZeppelin 5.7's default is v0.9).
    function entryPoint() public pure override returns (IEntryPoint) {
        return ERC4337Utils.ENTRYPOINT_V08;
    }

    /// @notice ERC-1271: verifiers that see code ask here instead of recovering the signer, so a
    /// signature by the account's key must stay valid (low `s`, as OpenZeppelin's ECDSA requires).
    function isValidSignature(bytes32 hash, bytes calldata signature) external view returns (bytes4) {
        return _rawSignatureValidation(hash, signature) ? IERC1271.isValidSignature.selector : bytes4(0xffffffff);
    }

    /// @dev A batch runs for the account itself (a transaction it signs to itself) or for the
    /// EntryPoint (a UserOperation that Account has validated with the account's key), as
    /// OpenZeppelin's ERC7821 documents.
    function _erc7821AuthorizedExecutor(
        address caller,
        bytes32 mode,
        bytes calldata executionData
    ) internal view override returns (bool) {
        return caller == address(entryPoint()) || super._erc7821AuthorizedExecutor(caller, mode, executionData);
    }
}
