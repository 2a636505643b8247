// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {PaymasterSigner} from "@openzeppelin/contracts/account/paymaster/extensions/PaymasterSigner.sol";
import {ERC4337Utils} from "@openzeppelin/contracts/account/utils/ERC4337Utils.sol";
import {IEntryPoint} from "@openzeppelin/contracts/interfaces/IERC4337.sol";
import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";
import {EIP712} from "@openzeppelin/contracts/utils/cryptography/EIP712.sol";
import {SignerECDSA} from "@openzeppelin/contracts/utils/cryptography/signers/SignerECDSA.sol";

/// @title SponsorPaymaster
/// @notice Pays the gas of UserOperations the paymaster service has approved, composed only of
/// OpenZeppelin Contracts' audited parts: PaymasterSigner checks the service key's EIP-712 signature
/// over the operation and its validity window (paymasterData = validAfter 6 ‖ validUntil 6 ‖
/// signature, packages/server/src/paymaster/data.ts), SignerECDSA holds that key, Ownable guards the
/// deposit, the stake and key rotation. The gas comes out of this contract's EntryPoint deposit.
contract SponsorPaymaster is PaymasterSigner, SignerECDSA, Ownable {
    /// @notice The service key changed (`setSigner`): signatures by the old key no longer validate.
    event SignerSet(address indexed signer);

    constructor(
        address signerAddr,
        address initialOwner
    ) EIP712("Latchkey Sponsor Paymaster", "1") SignerECDSA(signerAddr) Ownable(initialOwner) {
        emit SignerSet(signerAddr);
    }

    /// @notice EntryPoint v0.8 at its canonical address, the one our accounts use (OpenZeppelin
    /// 5.7's default is v0.9): only it may call validatePaymasterUserOp and postOp.
    function entryPoint() public pure override returns (IEntryPoint) {
        return ERC4337Utils.ENTRYPOINT_V08;
    }

    /// @notice Adds the ETH sent to this paymaster's EntryPoint deposit, which pays the gas. Anyone may.
    function deposit() external payable {
        _deposit(msg.value);
    }

    /// @notice Moves `value` wei of the EntryPoint deposit to `to`. Paymaster leaves these
    /// internal: without a guarded public version the deposit would be locked forever.
    function withdraw(address payable to, uint256 value) external onlyOwner {
        _withdraw(to, value);
    }

    /// @notice Stakes the ETH sent in the EntryPoint (what public-mempool bundlers require).
    function addStake(uint32 unstakeDelaySec) external payable onlyOwner {
        _addStake(msg.value, unstakeDelaySec);
    }

    /// @notice Starts the stake's unstake delay.
    function unlockStake() external onlyOwner {
        _unlockStake();
    }

    /// @notice Moves the unlocked stake to `to`.
    function withdrawStake(address payable to) external onlyOwner {
        _withdrawStake(to);
    }

    /// @notice Rotates the service key. SignerECDSA's setter is internal, for constructors.
    function setSigner(address signerAddr) external onlyOwner {
        _setSigner(signerAddr);
        emit SignerSet(signerAddr);
    }
}
