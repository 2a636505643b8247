// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {ERC7821} from "@openzeppelin/contracts/account/extensions/draft-ERC7821.sol";
import {IERC1271} from "@openzeppelin/contracts/interfaces/IERC1271.sol";
import {ERC1155Holder} from "@openzeppelin/contracts/token/ERC1155/utils/ERC1155Holder.sol";
import {ERC721Holder} from "@openzeppelin/contracts/token/ERC721/utils/ERC721Holder.sol";
import {SignerEIP7702} from "@openzeppelin/contracts/utils/cryptography/signers/SignerEIP7702.sol";

/// @title BatchExecutor
/// @notice The code an embedded wallet's account delegates to with EIP-7702, composed only of
/// OpenZeppelin Contracts' audited parts (all stateless, so nothing clashes with the account's
/// storage): ERC7821 runs a batch all or none and only for the account itself; SignerEIP7702
/// accepts the account's own key for ERC-1271; the holders and `receive` keep transfers to the
/// account working once it has code.
contract BatchExecutor is ERC7821, SignerEIP7702, ERC721Holder, ERC1155Holder, IERC1271 {
    /// @notice ERC-1271: verifiers that see code ask here instead of recovering the signer, so a
    /// signature by the account's key must stay valid (low `s`, as OpenZeppelin's ECDSA requires).
    function isValidSignature(bytes32 hash, bytes calldata signature) external view returns (bytes4) {
        return _rawSignatureValidation(hash, signature) ? IERC1271.isValidSignature.selector : bytes4(0xffffffff);
    }

    receive() external payable {}
}
