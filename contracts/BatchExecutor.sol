// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

/// @title BatchExecutor
/// @notice The code an embedded wallet's account delegates to with EIP-7702: it runs a batch of
/// calls from the account, all or none (ERC-7821, batch mode without opData). Only the account
/// itself may call `execute`: under delegation `address(this)` is the account, so a transaction the
/// account signs to itself is the only way in. The contract keeps no storage, so it cannot clash
/// with whatever the account held before or delegates to later.
contract BatchExecutor {
    /// @notice One call of a batch. `to == address(0)` means the account itself (ERC-7821).
    struct Call {
        address to;
        uint256 value;
        bytes data;
    }

    /// @dev ERC-7821 mode: call type 0x01 (batch), exec type 0x00 (revert on failure), no selector, no payload.
    bytes32 internal constant BATCH_MODE = 0x0100000000000000000000000000000000000000000000000000000000000000;

    /// @dev secp256k1 order / 2: a higher `s` is the malleable twin of a valid signature (EIP-2).
    uint256 internal constant HALF_ORDER = 0x7FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF5D576E7357A4501DDFE92F46681B20A0;

    /// @notice The caller is not the account itself.
    error Unauthorized();
    /// @notice ERC-7821: the mode is not one this executor runs.
    error UnsupportedExecutionMode();

    /// @notice Runs `executionData` (ABI-encoded `Call[]`) in order; if any call reverts, the whole
    /// batch reverts with that call's revert data.
    function execute(bytes32 mode, bytes calldata executionData) external payable {
        if (msg.sender != address(this)) revert Unauthorized();
        if (mode != BATCH_MODE) revert UnsupportedExecutionMode();
        Call[] memory calls = abi.decode(executionData, (Call[]));
        for (uint256 i = 0; i < calls.length; ++i) {
            Call memory call = calls[i];
            address to = call.to == address(0) ? address(this) : call.to;
            (bool success, bytes memory result) = to.call{value: call.value}(call.data);
            if (!success) {
                assembly ("memory-safe") {
                    revert(add(result, 0x20), mload(result))
                }
            }
        }
    }

    /// @notice ERC-7821: whether `execute` runs `mode`.
    function supportsExecutionMode(bytes32 mode) external pure returns (bool) {
        return mode == BATCH_MODE;
    }

    /// @notice ERC-1271: a signature by the account's own key is valid, as it was before the
    /// account had code (verifiers that see code ask here instead of recovering the signer).
    function isValidSignature(bytes32 hash, bytes calldata signature) external view returns (bytes4) {
        if (signature.length != 65) return 0xffffffff;
        bytes32 r = bytes32(signature[0:32]);
        bytes32 s = bytes32(signature[32:64]);
        uint8 v = uint8(signature[64]);
        if (v < 27) v += 27;
        if (uint256(s) > HALF_ORDER) return 0xffffffff;
        address signer = ecrecover(hash, v, r, s);
        return signer != address(0) && signer == address(this) ? bytes4(0x1626ba7e) : bytes4(0xffffffff);
    }

    /// @notice Plain transfers to the account keep working once it has code.
    receive() external payable {}

    /// @notice ERC-721 safe transfers to the account keep working once it has code.
    function onERC721Received(address, address, uint256, bytes calldata) external pure returns (bytes4) {
        return this.onERC721Received.selector;
    }

    /// @notice ERC-1155 safe transfers to the account keep working once it has code.
    function onERC1155Received(address, address, uint256, uint256, bytes calldata) external pure returns (bytes4) {
        return this.onERC1155Received.selector;
    }

    /// @notice ERC-1155 batch transfers to the account keep working once it has code.
    function onERC1155BatchReceived(address, address, uint256[] calldata, uint256[] calldata, bytes calldata) external pure returns (bytes4) {
        return this.onERC1155BatchReceived.selector;
    }
}
